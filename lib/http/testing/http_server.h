#pragma once
// LocalHttpServer: a tiny HTTP/1.x server on 127.0.0.1 (an ephemeral port) for tests of the
// plain HTTP client (lib/http/client.h) and --manifest-url. It answers one connection at a
// time from a table of routes, and can also misbehave on purpose: send any bytes and close,
// never answer, or stream without end.
//
//   LocalHttpServer server;
//   server.Route("/pods.yaml", LocalHttpServer::Ok(ReadFile("pods.yaml")));
//   http::Get("127.0.0.1", std::to_string(server.port()), "/pods.yaml", deadline, 1 << 20);

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace nodegate::http::testing {

class LocalHttpServer {
 public:
  struct Reply {
    enum class Kind { kRaw, kHang, kEndless } kind = Kind::kRaw;
    std::string raw;  // the whole response, for kRaw
  };
  // Ok: 200 with Content-Length. Status: any status line ("404 Not Found") and headers.
  static Reply Ok(const std::string& body);
  static Reply Status(const std::string& status, const std::string& headers = "",
                      const std::string& body = "");
  static Reply Raw(std::string raw) { return Reply{Reply::Kind::kRaw, std::move(raw)}; }
  static Reply Hang() { return Reply{Reply::Kind::kHang, ""}; }
  static Reply Endless() { return Reply{Reply::Kind::kEndless, ""}; }

  LocalHttpServer();
  ~LocalHttpServer();
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  void Route(const std::string& path, Reply reply);
  std::string Url(const std::string& path) const;
  int port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  void Serve();
  void Handle(int fd);
  bool WaitReadable(int fd) const;  // false when told to stop

  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::map<std::string, Reply> routes_;
  std::thread thread_;
};

}  // namespace nodegate::http::testing
