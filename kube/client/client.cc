// The only translation unit with Beast's client templates (see client.h).
#include "kube/client/client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace nodegate::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kMaxErrorBody = 1u << 20;
constexpr size_t kIdleConnections = 4;

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

template <class Fields>
std::optional<std::chrono::seconds> RetryAfterOf(const Fields& fields) {
  auto it = fields.find(http::field::retry_after);
  if (it == fields.end()) {
    return std::nullopt;
  }
  return ParseRetryAfter(std::string_view(it->value().data(), it->value().size()));
}

}  // namespace

// Connection: one TLS connection to the API server, driven synchronously: each operation is
// started asynchronously and the private io_context runs until it completes, its deadline
// (the socket's expiry) passes, or the client is cancelled or interrupted.
class ApiClient::Connection {
 public:
  Connection(const ClientConfig& config, const tls::SslContext& tls,
             const std::atomic<bool>& cancelled, const std::atomic<bool>& interrupt)
      : config_(config),
        ctx_(UpRef(tls)),
        stream_(ioc_, ctx_),
        cancelled_(cancelled),
        interrupt_(interrupt) {}

  Result<admit::Ok> Open() {
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
    open_ = true;
    return admit::Ok{};
  }

  Result<admit::Ok> Send(const std::string& method, const std::string& target,
                         const std::string& body) {
    auto token = BearerToken(config_);
    if (!token.ok()) {
      return token.error();
    }
    http::request<http::string_body> request{http::string_to_verb(method), target, 11};
    const bool v6 = config_.host.find(':') != std::string::npos;
    request.set(http::field::host,
                (v6 ? "[" + config_.host + "]" : config_.host) + ":" + config_.port);
    request.set(http::field::user_agent, "nodegate");
    request.set(http::field::accept, "application/json");
    if (!token->empty()) {
      request.set(http::field::authorization, "Bearer " + *token);
    }
    if (!body.empty()) {
      request.set(http::field::content_type, "application/json");
      request.body() = body;
    }
    request.keep_alive(true);
    request.prepare_payload();
    auto ec = Run([&](auto handler) { http::async_write(stream_, request, handler); });
    if (ec) {
      open_ = false;
      return Fail(method + " " + target + ": send", ec);
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
      if (!result && (cancelled_.load() || (streaming_ && interrupt_.load()))) {
        beast::error_code ignored;
        Lowest().socket().close(ignored);
        ioc_.restart();
        ioc_.run();
        result = asio::error::operation_aborted;
        open_ = false;
      }
    }
    return *result;
  }

  Error Fail(const std::string& what, const beast::error_code& ec) const {
    std::string text = ec == beast::error::timeout ? "timed out" : ec.message();
    if (ec == asio::error::operation_aborted) {
      text = "cancelled";
    }
    if (ec.category() == asio::error::get_ssl_category()) {
      text += " (" + tls::OpenSslErrors() + ")";
    }
    return Error{config_.host + ":" + config_.port + ": " + what + ": " + text};
  }

  asio::io_context ioc_;
  const ClientConfig& config_;
  asio::ssl::context ctx_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  const std::atomic<bool>& cancelled_;
  const std::atomic<bool>& interrupt_;
  bool streaming_ = false;  // Interrupt() ends only streams
  bool open_ = false;       // connected, and no request left half-done on it

 private:
  static SSL_CTX* UpRef(const tls::SslContext& tls) {
    SSL_CTX_up_ref(tls.get());
    return tls.get();
  }
};

ApiClient::ApiClient(ClientConfig config, tls::SslContext tls)
    : config_(std::move(config)), tls_(std::move(tls)) {}

ApiClient::~ApiClient() = default;

Result<std::unique_ptr<ApiClient>> ApiClient::Create(ClientConfig config) {
  auto tls = tls::MakeClientContext(config.tls);
  if (!tls.ok()) {
    return Error{config.source + ": " + tls.error().message};
  }
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(config), std::move(tls).value()));
}

std::unique_ptr<ApiClient::Connection> ApiClient::TakeIdle() {
  std::lock_guard lock(pool_mu_);
  if (idle_.empty()) {
    return nullptr;
  }
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void ApiClient::GiveBack(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(pool_mu_);
  if (idle_.size() < kIdleConnections) {
    idle_.push_back(std::move(connection));
  }
}

Result<HttpResult> ApiClient::Call(const std::string& method, const std::string& target,
                                   const std::string& body, Clock::time_point deadline,
                                   size_t max_body) {
  // A kept-alive connection the server has closed meanwhile fails on first use: then once
  // more on a new one (the request had not reached the server).
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<Connection> c = attempt == 0 ? TakeIdle() : nullptr;
    const bool reused = c != nullptr;
    if (!c) {
      c = std::make_unique<Connection>(config_, tls_, cancelled_, interrupt_);
    }
    c->Lowest().expires_at(deadline);
    if (!reused) {
      if (auto opened = c->Open(); !opened.ok()) {
        return opened.error();
      }
    }
    if (auto sent = c->Send(method, target, body); !sent.ok()) {
      if (reused) {
        continue;
      }
      return sent.error();
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_body);
    auto ec =
        c->Run([&](auto handler) { http::async_read(c->stream_, c->buffer_, parser, handler); });
    if (ec) {
      if (reused && !parser.got_some() &&
          (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
           ec == asio::ssl::error::stream_truncated)) {
        continue;
      }
      return c->Fail(method + " " + target, ec);
    }
    HttpResult out;
    out.status = static_cast<int>(parser.get().result_int());
    out.retry_after = RetryAfterOf(parser.get());
    const bool keep = parser.get().keep_alive();
    out.body = std::move(parser.get().body());
    if (keep && c->open_) {
      GiveBack(std::move(c));
    }
    return out;
  }
  return Error{config_.host + ":" + config_.port + ": " + method + " " + target +
               ": the connection closed twice"};
}

Result<HttpResult> ApiClient::Stream(const std::string& target, std::chrono::milliseconds idle,
                                     const std::function<bool(const StreamHead&)>& on_head,
                                     const std::function<bool(std::string_view bytes)>& on_body) {
  if (cancelled_) {
    return Error{"cancelled"};
  }
  interrupt_ = false;
  Connection c(config_, tls_, cancelled_, interrupt_);
  c.streaming_ = true;
  c.Lowest().expires_after(idle);
  if (auto opened = c.Open(); !opened.ok()) {
    return opened.error();
  }
  if (auto sent = c.Send("GET", target, ""); !sent.ok()) {
    return sent.error();
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  auto ec =
      c.Run([&](auto handler) { http::async_read_header(c.stream_, c.buffer_, parser, handler); });
  if (ec) {
    return c.Fail("GET " + target, ec);
  }
  HttpResult out;
  out.status = static_cast<int>(parser.get().result_int());
  out.retry_after = RetryAfterOf(parser.get());
  const bool go_on = on_head(StreamHead{out.status, out.retry_after});
  std::array<char, 256u << 10> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    c.Lowest().expires_after(idle);
    // read_some: whatever has arrived, so an event is handled when its chunk comes, not when
    // the buffer has filled.
    ec = c.Run([&](auto handler) { http::async_read_some(c.stream_, c.buffer_, parser, handler); });
    if (ec == beast::error::timeout) {
      out.idle = true;
      break;
    }
    if (ec && ec != http::error::need_buffer) {
      return c.Fail("GET " + target, ec);
    }
    const std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
    if (!go_on) {
      out.body.append(got.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, out.body.size())));
      if (out.body.size() >= kMaxErrorBody) {
        break;
      }
    } else if (!got.empty() && !on_body(got)) {
      break;
    }
  }
  return out;
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  while (!value.empty() && value.back() == ' ') {
    value.remove_suffix(1);
  }
  if (value.empty() || value.size() > 9) {
    return std::nullopt;
  }
  int64_t seconds = 0;
  for (char ch : value) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) {
      return std::nullopt;
    }
    seconds = seconds * 10 + (ch - '0');
  }
  return std::chrono::seconds(seconds);
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string StatusMessage(const std::string& what, int status, const std::string& body) {
  std::string message;
  try {
    const nlohmann::json j = nlohmann::json::parse(body);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) {
      message = j["message"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  return what + ": HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

}  // namespace nodegate::kube
