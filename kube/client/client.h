#pragma once
// ApiClient: requests to the Kubernetes API server over HTTPS (Boost.Beast, OpenSSL):
//   - Call: one request with a JSON body or none (GET, POST, PUT, DELETE), the whole answer,
//     over a kept-alive connection from a small pool (the claims of the webhook's replicas
//     are a read and a write per allowed pod: a TLS handshake each would double their cost);
//   - Stream: a GET whose body is handed over in pieces as they arrive (a list of 150,000 pods,
//     a watch), on a connection of its own, bounded by an idle limit rather than a deadline.
// The bearer token is read again for every request (a projected service-account token
// rotates). No Boost in this header; client.cc is the one translation unit that pays for it.
//
//   auto client = ApiClient::Create(config);
//   auto got = client->Call("GET", "/api/v1/nodes/n1", "", Clock::now() + 5s, 256 << 20);
//   client->Stream("/api/v1/pods?watch=1&resourceVersion=42", 60s,
//                  [](const StreamHead& head) { return head.status == 200; },
//                  [](std::string_view bytes) { ...; return true; });

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client/config.h"
#include "lib/tls/tls.h"

namespace nodegate::kube {

using Clock = std::chrono::steady_clock;

struct HttpResult {
  int status = 0;
  std::string body;
  // Retry-After in seconds (429, 503), when the answer has one.
  std::optional<std::chrono::seconds> retry_after;
  // Stream only: the body stopped for `idle` after it had begun (the connection is dropped).
  bool idle = false;
};

// StreamHead: the status line and headers of a streamed answer, before its body.
struct StreamHead {
  int status = 0;
  std::optional<std::chrono::seconds> retry_after;
};

class ApiClient {
 public:
  static Result<std::unique_ptr<ApiClient>> Create(ClientConfig config);
  ~ApiClient();

  // Call: `method` on `target` with `body` (JSON; none when empty), finished by `deadline`;
  // bodies over `max_body` are an error.
  Result<HttpResult> Call(const std::string& method, const std::string& target,
                          const std::string& body, Clock::time_point deadline, size_t max_body);
  Result<HttpResult> Get(const std::string& target, Clock::time_point deadline, size_t max_body) {
    return Call("GET", target, "", deadline, max_body);
  }

  // Stream: GET `target`; `on_head` sees the status and headers (false: stop there; a non-200
  // answer's body, at most 1 MiB, is then read and returned), then `on_body` every piece of the
  // body as it arrives (false: stop). Nothing for `idle` once the body has begun ends it with
  // HttpResult::idle set; an error when the connection fails, no answer comes within `idle`,
  // or Cancel() or Interrupt() is called.
  Result<HttpResult> Stream(const std::string& target, std::chrono::milliseconds idle,
                            const std::function<bool(const StreamHead&)>& on_head,
                            const std::function<bool(std::string_view bytes)>& on_body);

  // Cancel: from any thread, ends every Stream in progress or started later.
  void Cancel() { cancelled_ = true; }
  // Interrupt: ends the Stream in progress (if any) now; later ones run.
  void Interrupt() { interrupt_ = true; }

  const ClientConfig& config() const { return config_; }

  class Connection;

 private:
  ApiClient(ClientConfig config, tls::SslContext tls);
  std::unique_ptr<Connection> TakeIdle();
  void GiveBack(std::unique_ptr<Connection> connection);

  const ClientConfig config_;
  const tls::SslContext tls_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> interrupt_{false};
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // kept-alive connections for Call
};

// ParseRetryAfter: the header's delay-seconds ("3" -> 3 s); the HTTP-date form, which the API
// server never sends, and anything else give nothing.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value);

// UrlEncode: a query parameter's value.
std::string UrlEncode(std::string_view text);

// StatusMessage: "what: HTTP 409: <the Status's message>" of a failed answer.
std::string StatusMessage(const std::string& what, int status, const std::string& body);

}  // namespace nodegate::kube
