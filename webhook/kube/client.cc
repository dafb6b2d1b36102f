// The only translation unit with Beast's client templates (see client.h).
#include "webhook/kube/client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>
#include <optional>

namespace nodegate::webhook::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kMaxLineBytes = 64u << 20;

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Connection: one TLS connection to the API server, driven synchronously: each operation is
// started asynchronously and the private io_context runs until it completes, its deadline
// (the socket's expiry) passes, or the client is cancelled.
class Connection {
 public:
  Connection(const ClientConfig& config, const net::SslContext& tls,
             const std::atomic<bool>& cancelled)
      : config_(config), ctx_(UpRef(tls)), stream_(ioc_, ctx_), cancelled_(cancelled) {}

  Result<admit::Ok> Open(const std::string& target) {
    tcp::resolver::results_type endpoints;
    boost::system::error_code ec;
    if (IsIpAddress(config_.host)) {
      const tcp::endpoint ep(asio::ip::make_address(config_.host),
                             static_cast<uint16_t>(std::stoul(config_.port)));
      endpoints = tcp::resolver::results_type::create(ep, config_.host, config_.port);
    } else {
      // The one name lookup of the webhook (a kubeconfig that names its server).
      tcp::resolver resolver(ioc_);
      endpoints = resolver.resolve(config_.host, config_.port, ec);
      if (ec) {
        return Fail("resolve " + config_.host, ec);
      }
    }
    ec = Run([&](auto handler) { Lowest().async_connect(endpoints, handler); });
    if (ec) {
      return Fail("connect", ec);
    }
    SSL* ssl = stream_.native_handle();
    const std::string& name = config_.server_name.empty() ? config_.host : config_.server_name;
    if (!config_.tls.insecure_skip_verify) {
      if (IsIpAddress(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
      } else {
        SSL_set1_host(ssl, name.c_str());
      }
    }
    if (!IsIpAddress(name)) {
      SSL_set_tlsext_host_name(ssl, name.c_str());
    }
    ec = Run(
        [&](auto handler) { stream_.async_handshake(asio::ssl::stream_base::client, handler); });
    if (ec) {
      return Fail("TLS handshake", ec);
    }
    auto token = BearerToken(config_);
    if (!token.ok()) {
      return token.error();
    }
    http::request<http::empty_body> request{http::verb::get, target, 11};
    const bool v6 = config_.host.find(':') != std::string::npos;
    request.set(http::field::host,
                (v6 ? "[" + config_.host + "]" : config_.host) + ":" + config_.port);
    request.set(http::field::user_agent, "nodegate-webhook");
    request.set(http::field::accept, "application/json");
    if (!token->empty()) {
      request.set(http::field::authorization, "Bearer " + *token);
    }
    ec = Run([&](auto handler) { http::async_write(stream_, request, handler); });
    if (ec) {
      return Fail("send request", ec);
    }
    return admit::Ok{};
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // Run: one asynchronous operation to its end. Cancellation is looked at five times a second.
  template <class Start>
  beast::error_code Run(Start&& start) {
    std::optional<beast::error_code> result;
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    while (!result) {
      ioc_.run_for(std::chrono::milliseconds(200));
      if (!result && cancelled_.load()) {
        beast::error_code ignored;
        Lowest().socket().close(ignored);
        ioc_.restart();
        ioc_.run();
        result = asio::error::operation_aborted;
      }
    }
    return *result;
  }

  Error Fail(const std::string& what, const beast::error_code& ec) const {
    std::string text = ec == beast::error::timeout ? "timed out" : ec.message();
    if (ec.category() == asio::error::get_ssl_category()) {
      text += " (" + net::OpenSslErrors() + ")";
    }
    return Error{config_.host + ":" + config_.port + ": " + what + ": " + text};
  }

  asio::io_context ioc_;
  const ClientConfig& config_;
  asio::ssl::context ctx_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  const std::atomic<bool>& cancelled_;

 private:
  static SSL_CTX* UpRef(const net::SslContext& tls) {
    SSL_CTX_up_ref(tls.get());
    return tls.get();
  }
};

}  // namespace

Result<std::unique_ptr<ApiClient>> ApiClient::Create(ClientConfig config) {
  auto tls = net::MakeClientContext(config.tls);
  if (!tls.ok()) {
    return Error{config.source + ": " + tls.error().message};
  }
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(config), std::move(tls).value()));
}

Result<HttpResult> ApiClient::Get(const std::string& target, Clock::time_point deadline,
                                  size_t max_body) {
  Connection c(config_, tls_, cancelled_);
  c.Lowest().expires_at(deadline);
  if (auto opened = c.Open(target); !opened.ok()) {
    return opened.error();
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_body);
  auto ec = c.Run([&](auto handler) { http::async_read(c.stream_, c.buffer_, parser, handler); });
  if (ec) {
    return c.Fail("GET " + target, ec);
  }
  HttpResult out;
  out.status = static_cast<int>(parser.get().result_int());
  out.body = std::move(parser.get().body());
  return out;
}

Result<int> ApiClient::Stream(const std::string& target, std::chrono::milliseconds idle,
                              const std::function<bool(std::string_view line)>& on_line) {
  if (cancelled_) {
    return Error{"cancelled"};
  }
  Connection c(config_, tls_, cancelled_);
  c.Lowest().expires_after(idle);
  if (auto opened = c.Open(target); !opened.ok()) {
    return opened.error();
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  auto ec =
      c.Run([&](auto handler) { http::async_read_header(c.stream_, c.buffer_, parser, handler); });
  if (ec) {
    return c.Fail("GET " + target, ec);
  }
  const int status = static_cast<int>(parser.get().result_int());
  if (status != 200) {
    return status;
  }
  std::array<char, 64u << 10> chunk;
  std::string pending;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    c.Lowest().expires_after(idle);
    // read_some: whatever has arrived, so an event is handled when its chunk comes, not when
    // 64 KiB have gathered.
    ec = c.Run([&](auto handler) { http::async_read_some(c.stream_, c.buffer_, parser, handler); });
    if (ec && ec != http::error::need_buffer) {
      return c.Fail("watch " + target, ec);
    }
    pending.append(chunk.data(), chunk.size() - parser.get().body().size);
    size_t start = 0;
    for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      const std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && !on_line(line)) {
        return status;
      }
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLineBytes) {
      return Error{"watch " + target + ": a line longer than 64 MiB"};
    }
  }
  if (!pending.empty()) {
    on_line(pending);
  }
  return status;
}

}  // namespace nodegate::webhook::kube
