#include "lib/etcd/http.h"

#include <gtest/gtest.h>

namespace nodegate::etcd {
namespace {

// Feeds `text` in pieces of `step` bytes.
Result<HttpResponse> Parse(const std::string& text, size_t step, size_t max_body = 1 << 20) {
  ResponseParser parser(max_body);
  for (size_t i = 0; i < text.size() && !parser.done(); i += step) {
    NG_RETURN_IF_ERROR(parser.Feed(std::string_view(text).substr(i, step)));
  }
  if (!parser.done()) NG_RETURN_IF_ERROR(parser.Eof());
  return parser.Take();
}

TEST(FormatPost, RequestLineHeadersBody) {
  EXPECT_EQ(FormatPost("127.0.0.1:2379", "/v3/kv/txn", "{}", ""),
            "POST /v3/kv/txn HTTP/1.1\r\nHost: 127.0.0.1:2379\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_NE(FormatPost("h:1", "/p", "", "tok").find("\r\nAuthorization: tok\r\n"),
            std::string::npos);
}

TEST(ResponseParser, ContentLengthInAnyPieces) {
  const std::string text =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
      "11\r\n\r\n{\"a\":\"bcd\"}";
  for (size_t step : {1u, 3u, 7u, 1000u}) {
    auto r = Parse(text, step);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "{\"a\":\"bcd\"}");
    EXPECT_TRUE(r->keep_alive);
  }
}

TEST(ResponseParser, Chunked) {
  const std::string text =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\n{\"a\"\r\n6;ext=1\r\n:\"bcd\"\r\n1\r\n}\r\n0\r\n\r\n";
  for (size_t step : {1u, 5u, 1000u}) {
    auto r = Parse(text, step);
    ASSERT_TRUE(r.ok()) << r.error().msg;
    EXPECT_EQ(r->body, "{\"a\":\"bcd\"}");
  }
}

TEST(ResponseParser, BodyUntilCloseAndConnectionClose) {
  auto r = Parse("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\nno leader", 4);
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "no leader");
  EXPECT_FALSE(r->keep_alive);
}

TEST(ResponseParser, ContinueThenResponse) {
  auto r = Parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 2);
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
}

TEST(ResponseParser, RefusesWhatIsNotHttpOrTooLarge) {
  const char* bad[] = {
      "SSH-2.0-OpenSSH_9.2\r\n\r\n",
      "HTTP/1.1 20x OK\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
      "HTTP/1.1 200 OK\r\nbroken header\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",  // closed early
  };
  for (const char* text : bad) {
    auto r = Parse(text, 3);
    EXPECT_FALSE(r.ok()) << text;
  }
  auto big = Parse("HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n", 100, 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().msg.find("2000 bytes"), std::string::npos) << big.error().msg;
  auto big_chunks = Parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" +
                              std::string(1000, 'a') + "\r\n3e8\r\n",
                          100, 1500);
  EXPECT_FALSE(big_chunks.ok());
  EXPECT_FALSE(Parse(std::string(70000, 'a'), 1000).ok());
}

}  // namespace
}  // namespace nodegate::etcd
