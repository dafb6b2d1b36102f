// The only translation unit with Beast's server templates (see server.h).
#include "webhook/net/server.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::webhook::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Result<std::pair<std::string, uint16_t>> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Error(kErrInvalidConfig, "--listen " + listen + ": expected ADDR:PORT");
  }
  std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    host = "0.0.0.0";
  }
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  if (ec) {
    return Error(kErrInvalidConfig,
                 "--listen " + listen + ": " + host + " is not a numeric IP address");
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port_text) > 65535) {
    return Error(kErrInvalidConfig,
                 "--listen " + listen + ": port must be a number from 0 to 65535");
  }
  return std::pair{host, static_cast<uint16_t>(std::stoul(port_text))};
}

struct Server::Impl {
  Impl(const ServerOptions& o, Handler h, tls::ServerCertificate* t, RefusedFn r)
      : options(o),
        handler(std::move(h)),
        refused(std::move(r)),
        tls(t),
        workers(static_cast<size_t>(std::max(1, o.workers))) {}

  void Accept();
  std::shared_ptr<asio::ssl::context> TlsContext();
  void Refused(int status) {
    if (refused) {
      refused(status);
    }
  }

  const ServerOptions options;
  const Handler handler;
  const RefusedFn refused;
  tls::ServerCertificate* const tls;
  // Declared before the io_context: sessions destroyed with its queue still count down.
  std::atomic<size_t> connections{0};
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer retry{ioc};
  // After the io_context: pending handler calls hold sessions whose sockets belong to it.
  asio::thread_pool workers;
  std::vector<std::thread> threads;
  std::mutex tls_mu;
  ssl_ctx_st* tls_raw = nullptr;
  std::shared_ptr<asio::ssl::context> tls_context;
  std::once_flag stop_once;
  // Drain: no new connection, no keep-alive; `busy` requests are being handled or answered;
  // connections waiting for a next request are closed through `idle_closers`.
  std::atomic<bool> draining{false};
  std::atomic<size_t> busy{0};
  std::mutex idle_mu;
  uint64_t next_idle_id = 0;
  std::map<uint64_t, std::function<void()>> idle_closers;

  uint64_t AddIdle(std::function<void()> closer) {
    std::lock_guard lock(idle_mu);
    idle_closers.emplace(++next_idle_id, std::move(closer));
    return next_idle_id;
  }
  void RemoveIdle(uint64_t id) {
    std::lock_guard lock(idle_mu);
    idle_closers.erase(id);
  }
};

std::shared_ptr<asio::ssl::context> Server::Impl::TlsContext() {
  tls::SslContext current = tls->Current();
  std::lock_guard lock(tls_mu);
  if (current.get() != tls_raw) {
    // asio's context takes a reference of its own; the raw one stays with ServerCertificate.
    SSL_CTX_up_ref(current.get());
    tls_context = std::make_shared<asio::ssl::context>(current.get());
    tls_raw = current.get();
  }
  return tls_context;
}

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

bool IsParseError(const beast::error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Server::Impl& server, tcp::socket socket, std::shared_ptr<asio::ssl::context> tls)
      : server_(server), tls_(std::move(tls)), stream_(MakeStream(std::move(socket), tls_)) {
    ++server_.connections;
  }
  ~Session() { --server_.connections; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void Start() {
    Lowest().expires_after(server_.options.request_timeout);
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) {
                                  self->Lowest().close();
                                  return;
                                }
                                self->ReadRequest(/*first=*/true);
                              });
    } else {
      ReadRequest(/*first=*/true);
    }
  }

 private:
  static Stream MakeStream(tcp::socket socket, const std::shared_ptr<asio::ssl::context>& tls) {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      return Stream(beast::tcp_stream(std::move(socket)), *tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadRequest(bool first) {
    // One deadline for the whole request (on the first, the handshake's time counts too): a
    // client that trickles bytes is cut off, however steadily it sends them.
    if (!first) {
      Lowest().expires_after(server_.options.request_timeout);
    }
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header));
    parser_->body_limit(server_.options.max_body);
    if (!first) {
      // Waiting for the next request of a kept-alive connection: a drain closes it unless a
      // request has begun to arrive.
      std::weak_ptr<Session> weak = this->shared_from_this();
      idle_id_ = server_.AddIdle([weak] {
        if (auto self = weak.lock()) {
          asio::post(self->stream_.get_executor(), [self] {
            if (self->parser_ && !self->parser_->got_some() && self->buffer_.size() == 0) {
              self->Lowest().close();
            }
          });
        }
      });
    }
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (idle_id_ != 0) {
      server_.RemoveIdle(idle_id_);
      idle_id_ = 0;
    }
    if (ec) {
      if (ec == http::error::body_limit) {
        Refuse(413, "request body larger than " + std::to_string(server_.options.max_body >> 20) +
                        " MiB\n");
      } else if (ec == http::error::header_limit) {
        Refuse(431, "request header too large\n");
      } else if (IsParseError(ec)) {
        Refuse(400, "malformed HTTP request: " + ec.message() + "\n");
      } else {
        Lowest().close();  // timeout, end of stream, reset
      }
      return;
    }
    auto& message = parser_->get();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.content_type = std::string(message[http::field::content_type]);
    request.body = std::move(message.body());
    // Draining: this answer is the connection's last, so the client opens its next elsewhere.
    const bool keep_alive = message.keep_alive() && !server_.draining.load();
    ++server_.busy;
    counted_ = true;
    Lowest().expires_never();  // the handler's time is bounded by the handler
    if (server_.options.run_inline && server_.options.run_inline(request)) {
      Write(Call(request), keep_alive);
      return;
    }
    asio::post(server_.workers,
               [self = this->shared_from_this(), request = std::move(request), keep_alive]() {
                 HttpResponse response = self->Call(request);
                 asio::post(self->stream_.get_executor(),
                            [self, response = std::move(response), keep_alive]() mutable {
                              self->Write(std::move(response), keep_alive);
                            });
               });
  }

  HttpResponse Call(const HttpRequest& request) {
    try {
      return server_.handler(request);
    } catch (const std::exception& e) {
      // A handler's bug must not end the process: this request fails, others go on.
      return HttpResponse{500, "text/plain", std::string("internal error: ") + e.what()};
    }
  }

  void Refuse(int status, std::string text) {
    server_.Refused(status);
    Write(HttpResponse{status, "text/plain", std::move(text)}, /*keep_alive=*/false);
  }

  void Write(HttpResponse r, bool keep_alive) {
    response_ = {};
    response_.version(11);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::content_type, r.content_type);
    response_.body() = std::move(r.body);
    response_.keep_alive(keep_alive);
    response_.prepare_payload();
    Lowest().expires_after(server_.options.request_timeout);
    http::async_write(
        stream_, response_,
        [self = this->shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
          if (self->counted_) {
            self->counted_ = false;
            --self->server_.busy;
          }
          if (ec) {
            self->Lowest().close();
          } else if (keep_alive) {
            self->ReadRequest(/*first=*/false);
          } else {
            self->Shutdown();
          }
        });
  }

  void Shutdown() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      Lowest().expires_after(std::chrono::seconds(1));
      stream_.async_shutdown(
          [self = this->shared_from_this()](beast::error_code) { self->Lowest().close(); });
    } else {
      beast::error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      Lowest().close();
    }
  }

  Server::Impl& server_;
  std::shared_ptr<asio::ssl::context> tls_;  // the certificate this connection was served
  Stream stream_;
  beast::flat_buffer buffer_{64u << 10};
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  uint64_t idle_id_ = 0;  // registered as waiting for a next request
  bool counted_ = false;  // a request of this session is in `busy`
};

}  // namespace

void Server::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) {
      return;
    }
    if (ec) {
      // Out of descriptors or memory: wait a little instead of spinning on the error.
      retry.expires_after(std::chrono::milliseconds(50));
      retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) {
          Accept();
        }
      });
      return;
    }
    if (connections.load() >= options.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);  // shed: the client retries on another connection or replica
    } else if (tls != nullptr) {
      std::make_shared<Session<TlsStream>>(*this, std::move(socket), TlsContext())->Start();
    } else {
      std::make_shared<Session<PlainStream>>(*this, std::move(socket), nullptr)->Start();
    }
    Accept();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, Handler handler,
                                              tls::ServerCertificate* tls, RefusedFn refused) {
  NG_ASSIGN_OR_RETURN(auto listen, ParseListen(options.listen));
  auto impl = std::make_unique<Impl>(options, std::move(handler), tls, std::move(refused));
  const tcp::endpoint endpoint(asio::ip::make_address(listen.first), listen.second);
  beast::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    impl->acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Error(kErrInvalidConfig, "listen on " + options.listen + ": " + ec.message());
  }
  impl->Accept();
  for (int i = 0; i < std::max(1, options.io_threads); ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

size_t Server::open_connections() const { return impl_->connections.load(); }

void Server::Drain(std::chrono::milliseconds grace) {
  if (!impl_) {
    return;
  }
  impl_->draining = true;
  asio::post(impl_->ioc, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
  });
  const auto stop = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < stop) {
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard lock(impl_->idle_mu);
      for (auto& [id, closer] : impl_->idle_closers) {
        closers.push_back(closer);
      }
    }
    for (auto& closer : closers) {
      closer();
    }
    if (impl_->busy.load() == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Stop();
}

void Server::Stop() {
  if (!impl_) {
    return;
  }
  std::call_once(impl_->stop_once, [this] {
    asio::post(impl_->ioc, [this] {
      beast::error_code ignored;
      impl_->acceptor.close(ignored);
    });
    impl_->ioc.stop();
    for (std::thread& t : impl_->threads) {
      t.join();
    }
    impl_->workers.stop();
    impl_->workers.join();
  });
}

}  // namespace nodegate::webhook::net
