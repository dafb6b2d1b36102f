#pragma once
// ApiClient: GET requests and watch streams to the Kubernetes API server over HTTPS (Boost.Beast,
// OpenSSL), one connection per call: a list, a watch or a fallback read, each with its own
// deadline. The bearer token is read again for every call (a projected service-account token
// rotates). No Boost in this header; client.cc is the one translation unit that pays for it.
//
//   auto client = ApiClient::Create(config);
//   auto nodes = client->Get("/api/v1/nodes", Clock::now() + 5s, 256 << 20);
//   client->Stream("/api/v1/pods?watch=1&resourceVersion=42", 300s,
//                  [](std::string_view line) { ...; return true; });

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "webhook/kube/config.h"
#include "webhook/net/tls.h"

namespace nodegate::webhook::kube {

using Clock = std::chrono::steady_clock;

struct HttpResult {
  int status = 0;
  std::string body;
};

class ApiClient {
 public:
  static Result<std::unique_ptr<ApiClient>> Create(ClientConfig config);

  // Get: the whole response, status and body (bodies over `max_body` are an error).
  Result<HttpResult> Get(const std::string& target, Clock::time_point deadline, size_t max_body);

  // Stream: GET `target` and give each line of the body to `on_line` as it arrives; a false
  // from on_line ends the stream. Returns the HTTP status (a non-200 status ends at once, its
  // body unread) when the server ends the body or on_line stops; an error when the connection
  // fails, nothing arrives for `idle`, or Cancel() is called. Lines over 64 MiB are an error.
  Result<int> Stream(const std::string& target, std::chrono::milliseconds idle,
                     const std::function<bool(std::string_view line)>& on_line);

  // Cancel: from any thread, ends every Stream in progress or started later.
  void Cancel() { cancelled_ = true; }

  const ClientConfig& config() const { return config_; }

 private:
  ApiClient(ClientConfig config, net::SslContext tls)
      : config_(std::move(config)), tls_(std::move(tls)) {}

  const ClientConfig config_;
  const net::SslContext tls_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace nodegate::webhook::kube
