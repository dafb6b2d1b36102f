#pragma once
// Server: the webhook's HTTP/1.1 server (Boost.Beast over Asio, TLS through OpenSSL), HTTPS
// for reviews or plain HTTP for the metrics port. Hostile clients are bounded: a request's
// header (16 KiB) and body (3 MiB, the API server's own limit) are capped, a whole request
// (TLS handshake, header and body) must arrive within `request_timeout`, and connections over
// `max_connections` are closed at once. I/O runs on `io_threads`; handlers run on a separate
// pool of `workers`, so a slow handler never stalls other connections' I/O.
//
//   auto server = Server::Start(options, handler, cert.get());   // cert == nullptr: plain HTTP
//   server->port();  server->Stop();
//
// This header has no Boost in it: only server.cc pays for Beast's templates.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lib/base/result.h"
#include "lib/tls/tls.h"

namespace nodegate::webhook::net {

struct HttpRequest {
  std::string method;
  std::string target;  // path and query, as sent
  std::string content_type;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Handler: one request to one response; called on a worker thread, concurrently.
using Handler = std::function<HttpResponse(const HttpRequest&)>;
// RefusedFn: told of every request refused before a handler saw it (413, 431, 400).
using RefusedFn = std::function<void(int status)>;

struct ServerOptions {
  std::string listen = "0.0.0.0:8443";  // ADDR:PORT, [v6]:PORT; port 0 picks a free one
  size_t max_body = 3u << 20;
  size_t max_header = 16u << 10;
  std::chrono::milliseconds request_timeout{10000};
  size_t max_connections = 4096;
  int io_threads = 2;
  int workers = 4;
  // RunInline: true for a request whose handler is known to be quick (no waiting); it then
  // runs on the I/O thread, saving two thread hand-offs. Unset: every request goes to workers.
  std::function<bool(const HttpRequest&)> run_inline;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, Handler handler,
                                               tls::ServerCertificate* tls,
                                               RefusedFn refused = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  size_t open_connections() const;
  // Drain: stop accepting, answer what has arrived (each answer closing its connection), close
  // the connections that wait for a next request, then Stop; at most `grace`.
  void Drain(std::chrono::milliseconds grace);
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ParseListen: "ADDR:PORT" or "[ADDR]:PORT" with a numeric address (no name lookup).
Result<std::pair<std::string, uint16_t>> ParseListen(const std::string& listen);

}  // namespace nodegate::webhook::net
