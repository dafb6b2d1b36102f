// The only translation unit with Beast's client templates (see client.h).
#include "kube/client/client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "lib/base/result.h"
#include "lib/http/client.h"
#include "lib/http/transport.h"

namespace nodegate::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kMaxErrorBody = 1u << 20;
constexpr size_t kIdleConnections = 4;

template <class Fields>
std::optional<std::chrono::seconds> RetryAfterOf(const Fields& fields) {
  auto it = fields.find(http::field::retry_after);
  if (it == fields.end()) {
    return std::nullopt;
  }
  return ParseRetryAfter(std::string_view(it->value().data(), it->value().size()));
}

// SetPeerName: the name (or address) the server's certificate must hold, and SNI.
void SetPeerName(SSL* ssl, const ClientConfig& config) {
  const std::string& name = config.server_name.empty() ? config.host : config.server_name;
  if (!config.tls.insecure_skip_verify) {
    if (nodegate::http::IsIpAddress(name)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    } else {
      SSL_set1_host(ssl, name.c_str());
    }
  }
  if (!nodegate::http::IsIpAddress(name)) {
    SSL_set_tlsext_host_name(ssl, name.c_str());
  }
}

// BuildRequest: a request to the API server with the current bearer token.
Result<http::request<http::string_body>> BuildRequest(const ClientConfig& config,
                                                      const std::string& method,
                                                      const std::string& target,
                                                      const std::string& body) {
  NG_ASSIGN_OR_RETURN(auto token, BearerToken(config));
  http::request<http::string_body> request{http::string_to_verb(method), target, 11};
  request.set(http::field::host, nodegate::http::HostHeader(config.host, config.port, ""));
  request.set(http::field::user_agent, "nodegate");
  request.set(http::field::accept, "application/json");
  if (!token.empty()) {
    request.set(http::field::authorization, "Bearer " + token);
  }
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
  }
  request.keep_alive(true);
  request.prepare_payload();
  return request;
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

  // ConnectTcp: the TCP connection (the one name lookup, when the kubeconfig names its server).
  Status ConnectTcp() {
    boost::system::error_code ec;
    auto endpoints = nodegate::http::Resolve(ioc_, config_.host, config_.port, ec);
    if (ec) {
      return Fail("resolve " + config_.host, ec);
    }
    ec = Run([&](auto handler) { Lowest().async_connect(endpoints, handler); });
    if (ec) {
      return Fail("connect", ec);
    }
    return OkStatus();
  }

  Status Open() {
    NG_RETURN_IF_ERROR(ConnectTcp());
    SetPeerName(stream_.native_handle(), config_);
    auto ec = Run(
        [&](auto handler) { stream_.async_handshake(asio::ssl::stream_base::client, handler); });
    if (ec) {
      return Fail("TLS handshake", ec);
    }
    open_ = true;
    return OkStatus();
  }

  Status Send(const std::string& method, const std::string& target, const std::string& body) {
    NG_ASSIGN_OR_RETURN(auto request, BuildRequest(config_, method, target, body));
    auto ec = Run([&](auto handler) { http::async_write(stream_, request, handler); });
    if (ec) {
      open_ = false;
      return Fail(method + " " + target + ": send", ec);
    }
    return OkStatus();
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // Run: one asynchronous operation to its end, or to Cancel() (and, streaming, Interrupt()).
  template <class Start>
  beast::error_code Run(Start&& start) {
    return nodegate::http::RunOne(
        ioc_, std::forward<Start>(start),
        [this] { return cancelled_.load() || (streaming_ && interrupt_.load()); },
        [this] {
          beast::error_code ignored;
          Lowest().socket().close(ignored);
          open_ = false;
        });
  }

  Error Fail(const std::string& what, const beast::error_code& ec) const {
    std::string text = nodegate::http::ErrorText(ec);
    if (ec.category() == asio::error::get_ssl_category()) {
      text += " (" + tls::OpenSslErrors() + ")";
    }
    return Error(kErrIo, config_.host + ":" + config_.port + ": " + what + ": " + text);
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

namespace {

// DirectStream: a streamed GET on a TLS connection of its own, driven with OpenSSL on the
// socket and poll(), its response parsed by Beast's parser from memory. A gigabyte list comes
// as a hundred thousand TLS records (and, from some servers, millions of small chunks);
// through Asio's asynchronous operations each costs more in the event loop than the list costs
// to decode (measured: 4 s of CPU against about 1 s this way for 1.6 GB). Asio is used only to
// resolve and connect.
class DirectStream {
 public:
  enum Outcome { kData, kEnd, kIdle };

  DirectStream(int fd, const tls::SslContext& tls, const std::atomic<bool>& cancelled,
               const std::atomic<bool>& interrupt)
      : fd_(fd), ssl_(SSL_new(tls.get())), cancelled_(cancelled), interrupt_(interrupt) {}
  ~DirectStream() {
    if (ssl_ != nullptr) {
      SSL_free(ssl_);
    }
    ::close(fd_);
  }
  DirectStream(const DirectStream&) = delete;
  DirectStream& operator=(const DirectStream&) = delete;

  Status Handshake(const ClientConfig& config, std::chrono::milliseconds limit) {
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
      return Error(kErrIo, "TLS: " + tls::OpenSslErrors());
    }
    SetPeerName(ssl_, config);
    return Drive([&] { return SSL_connect(ssl_); }, limit, "TLS handshake");
  }

  Status Write(std::string_view bytes, std::chrono::milliseconds limit) {
    while (!bytes.empty()) {
      size_t written = 0;
      auto done = Drive([&] { return SSL_write_ex(ssl_, bytes.data(), bytes.size(), &written); },
                        limit, "send request");
      if (!done.ok()) {
        return done;
      }
      bytes.remove_prefix(written);
    }
    return OkStatus();
  }

  // Header: the response's status line and header.
  Status Header(http::response_parser<http::buffer_body>& parser, std::chrono::milliseconds idle) {
    while (!parser.is_header_done()) {
      NG_RETURN_IF_ERROR(Parse(parser));
      if (parser.is_header_done()) {
        break;
      }
      NG_ASSIGN_OR_RETURN(auto read, Read(parser, idle));
      if (!read) {
        return Error(kErrIo, "no answer within " + std::to_string(idle.count() / 1000) + " s");
      }
    }
    return OkStatus();
  }

  // Next: the body that has arrived, up to kBatch, as soon as nothing more waits behind it.
  Result<Outcome> Next(http::response_parser<http::buffer_body>& parser,
                       std::chrono::milliseconds idle, std::string_view& out) {
    batch_.resize(kBatch);
    parser.get().body().data = batch_.data();
    parser.get().body().size = batch_.size();
    auto filled = [&] { return batch_.size() - parser.get().body().size; };
    for (;;) {
      NG_RETURN_IF_ERROR(Parse(parser));
      out = std::string_view(batch_.data(), filled());
      if (parser.is_done()) {
        return kEnd;
      }
      if (batch_.size() - filled() < kRecord) {
        return kData;  // full enough
      }
      if (filled() > 0 && SSL_pending(ssl_) == 0 && !Readable(std::chrono::milliseconds(0))) {
        return kData;  // hand over what there is before waiting for more
      }
      NG_ASSIGN_OR_RETURN(auto read, Read(parser, idle));
      if (!read) {
        return kIdle;
      }
    }
  }

 private:
  static constexpr size_t kBatch = 256u << 10;
  static constexpr size_t kRecord = 16u << 10;  // the largest TLS record's plaintext

  // Parse: pending bytes into the parser as far as they go (a chunk header cut in two waits
  // for the rest; a full body buffer for the next batch).
  Status Parse(http::response_parser<http::buffer_body>& parser) {
    size_t used = 0;
    while (used < pending_.size() && !parser.is_done()) {
      beast::error_code ec;
      const size_t n = parser.put(asio::buffer(pending_.data() + used, pending_.size() - used), ec);
      used += n;
      if (ec == http::error::need_buffer || ec == http::error::need_more) {
        break;
      }
      if (ec) {
        pending_.erase(0, used);
        return Error(kErrIo, "malformed response: " + ec.message());
      }
      if (n == 0 || (parser.is_header_done() && parser.get().body().size == 0 &&
                     parser.get().body().data != nullptr)) {
        break;
      }
    }
    pending_.erase(0, used);
    return OkStatus();
  }

  bool Readable(std::chrono::milliseconds wait) {
    struct pollfd p = {fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) > 0;
  }

  // Drive: an OpenSSL call on the non-blocking socket, polled until it is done, `limit` passes
  // or the client is cancelled (looked at five times a second).
  template <class Call>
  Status Drive(Call call, std::chrono::milliseconds limit, const char* what) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (cancelled_.load() || interrupt_.load()) {
        return Error(kErrIo, std::string(what) + ": cancelled");
      }
      ERR_clear_error();
      const int rc = call();
      if (rc == 1) {
        return OkStatus();
      }
      const int err = SSL_get_error(ssl_, rc);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        return Error(kErrIo, std::string(what) + ": " + tls::OpenSslErrors());
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= give_up) {
        return Error(kErrIo, std::string(what) + ": timed out");
      }
      struct pollfd p = {fd_, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      ::poll(
          &p, 1,
          static_cast<int>(std::min<int64_t>(
              200, std::chrono::duration_cast<std::chrono::milliseconds>(give_up - now).count())));
    }
  }

  // Read: what the next TLS record holds into pending_; false when nothing came for `idle`.
  Result<bool> Read(http::response_parser<http::buffer_body>& parser,
                    std::chrono::milliseconds idle) {
    const auto give_up = std::chrono::steady_clock::now() + idle;
    char buf[kRecord];
    for (;;) {
      if (cancelled_.load() || interrupt_.load()) {
        return Error(kErrIo, "cancelled");
      }
      ERR_clear_error();
      size_t n = 0;
      const int rc = SSL_read_ex(ssl_, buf, sizeof(buf), &n);
      if (rc == 1) {
        pending_.append(buf, n);
        return true;
      }
      const int err = SSL_get_error(ssl_, rc);
      if (err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL) {
        // The server closed: a body that ends with the connection is done now; any other is
        // cut short.
        beast::error_code ec;
        parser.put_eof(ec);
        if (ec || !parser.is_done()) {
          return Error(kErrIo, "the connection closed before the response ended");
        }
        return true;
      }
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        return Error(kErrIo, "TLS read: " + tls::OpenSslErrors());
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= give_up) {
        return false;
      }
      Readable(std::min(std::chrono::duration_cast<std::chrono::milliseconds>(give_up - now),
                        std::chrono::milliseconds(200)));
    }
  }

  const int fd_;
  SSL* const ssl_;
  const std::atomic<bool>& cancelled_;
  const std::atomic<bool>& interrupt_;
  std::vector<char> batch_;
  std::string pending_;  // read, not yet parsed
};

}  // namespace

ApiClient::ApiClient(ClientConfig config, tls::SslContext tls)
    : config_(std::move(config)), tls_(std::move(tls)) {}

ApiClient::~ApiClient() = default;

Result<std::unique_ptr<ApiClient>> ApiClient::Create(ClientConfig config) {
  auto tls = tls::MakeClientContext(config.tls);
  if (!tls.ok()) {
    return tls.error().WithContext(config.source);
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
      NG_RETURN_IF_ERROR(c->Open());
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
  return Error(kErrIo, config_.host + ":" + config_.port + ": " + method + " " + target +
                           ": the connection closed twice");
}

Result<HttpResult> ApiClient::Stream(const std::string& target, std::chrono::milliseconds idle,
                                     const std::function<bool(const StreamHead&)>& on_head,
                                     const std::function<bool(std::string_view bytes)>& on_body) {
  if (cancelled_) {
    return Error(kErrIo, "cancelled");
  }
  interrupt_ = false;
  const std::string where = config_.host + ":" + config_.port + ": GET " + target + ": ";
  int fd = -1;
  {
    Connection c(config_, tls_, cancelled_, interrupt_);
    c.streaming_ = true;
    c.Lowest().expires_after(idle);
    NG_RETURN_IF_ERROR(c.ConnectTcp());
    boost::system::error_code ec;
    fd = c.Lowest().socket().release(ec);  // the socket is the DirectStream's from here on
    if (ec) {
      return Error(kErrIo, where + ec.message());
    }
  }
  DirectStream stream(fd, tls_, cancelled_, interrupt_);
  if (auto shook = stream.Handshake(config_, idle); !shook.ok()) {
    return Error(kErrIo, where + shook.error().msg);
  }
  NG_ASSIGN_OR_RETURN(auto request, BuildRequest(config_, "GET", target, ""));
  std::ostringstream text;
  text << request;
  if (auto sent = stream.Write(text.str(), idle); !sent.ok()) {
    return Error(kErrIo, where + sent.error().msg);
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (auto header = stream.Header(parser, idle); !header.ok()) {
    return Error(kErrIo, where + header.error().msg);
  }
  HttpResult out;
  out.status = static_cast<int>(parser.get().result_int());
  out.retry_after = RetryAfterOf(parser.get());
  const bool go_on = on_head(StreamHead{out.status, out.retry_after});
  std::string_view got;
  while (!parser.is_done()) {
    auto next = stream.Next(parser, idle, got);
    if (!next.ok()) {
      return Error(kErrIo, where + next.error().msg);
    }
    if (!go_on) {
      out.body.append(got.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, out.body.size())));
      if (out.body.size() >= kMaxErrorBody) {
        break;
      }
    } else if (!got.empty() && !on_body(got)) {
      break;
    }
    if (*next == DirectStream::kIdle) {
      out.idle = true;
      break;
    }
    if (*next == DirectStream::kEnd) {
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
