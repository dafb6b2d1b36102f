#include "lib/http/client.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/http/testing/http_server.h"

namespace nodegate::http {
namespace {

using testing::LocalHttpServer;

Result<Response> GetFrom(const LocalHttpServer& server, const std::string& path,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5),
                         size_t max_bytes = 1 << 20) {
  return Get("127.0.0.1", std::to_string(server.port()), path,
             std::chrono::steady_clock::now() + timeout, max_bytes);
}

// What a server sends before it closes the connection, and what Get makes of it.
TEST(HttpClientTest, ResponsesAsSent) {
  struct Case {
    std::string name;
    std::string raw;
    std::string want;  // "error: MESSAGE" or "STATUS BODY"
  };
  const std::string ok = "HTTP/1.1 200 OK\r\n";
  const std::vector<Case> cases = {
      {"content length", ok + "Content-Length: 3\r\n\r\nabcdef", "200 abc"},
      {"content length, cut short", ok + "Content-Length: 5\r\n\r\nabc",
       "error: reply cut short: 3 of 5 bytes"},
      {"chunked", ok + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
       "200 abcde"},
      {"chunked with a trailer",
       ok + "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n", "200 a"},
      {"chunked, cut short", ok + "Transfer-Encoding: chunked\r\n\r\n3\r\nab",
       "error: reply cut short in its chunked body"},
      {"chunked, bad size", ok + "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
       "error: malformed response: bad chunk"},
      {"no length: up to the end", "HTTP/1.0 200 OK\r\n\r\nall of it", "200 all of it"},
      {"headers cut short", ok + "Content-Le", "error: reply cut short in its headers"},
      {"empty reply", "", "error: empty reply"},
      {"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n",
       "error: not an HTTP/1.x response: \"SSH-2.0-OpenSSH\""},
      {"a 404", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "404 "},
  };
  LocalHttpServer server;
  for (size_t i = 0; i < cases.size(); ++i) {
    server.Route("/" + std::to_string(i), LocalHttpServer::Raw(cases[i].raw));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto got = GetFrom(server, "/" + std::to_string(i));
    const std::string summary =
        got.ok() ? std::to_string(got->status) + " " + got->body : "error: " + got.error().msg;
    EXPECT_EQ(summary, cases[i].want);
    if (!got.ok()) {
      EXPECT_EQ(got.error().code, kErrIo);
    }
  }
}

TEST(HttpClientTest, HeadersReasonAndRequest) {
  LocalHttpServer server;
  server.Route("/moved", LocalHttpServer::Status("302 Found", "Location: /there\r\n"));
  auto got = GetFrom(server, "/moved");
  ASSERT_TRUE(got.ok()) << got.error().msg;
  EXPECT_EQ(got->status, 302);
  EXPECT_EQ(got->reason, "Found");
  EXPECT_EQ(got->headers["location"], "/there");
  EXPECT_EQ(got->headers["content-length"], "0");
  EXPECT_EQ(server.requests(), 1);
}

TEST(HttpClientTest, DeadlineAndSize) {
  LocalHttpServer server;
  server.Route("/hang", LocalHttpServer::Hang());
  server.Route("/endless", LocalHttpServer::Endless());
  server.Route("/big", LocalHttpServer::Ok(std::string(2 << 20, 'x')));
  auto got = GetFrom(server, "/hang", std::chrono::milliseconds(300));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().msg, "no complete response in time");
  got = GetFrom(server, "/endless");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().msg, "response larger than 1 MiB");
  got = GetFrom(server, "/big");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().msg, "response larger than 1 MiB");
}

TEST(HttpClientTest, NothingListening) {
  int port = 0;
  {
    LocalHttpServer gone;
    port = gone.port();
  }
  auto got = Get("127.0.0.1", std::to_string(port), "/",
                 std::chrono::steady_clock::now() + std::chrono::seconds(5), 1 << 20);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().msg,
            "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

TEST(HttpClientTest, HostHeader) {
  EXPECT_EQ(HostHeader("10.0.0.1", "80", "80"), "10.0.0.1");
  EXPECT_EQ(HostHeader("10.0.0.1", "8080", "80"), "10.0.0.1:8080");
  EXPECT_EQ(HostHeader("::1", "443", ""), "[::1]:443");
}

}  // namespace
}  // namespace nodegate::http
