#include "lib/etcd/connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nodegate::etcd {
namespace {

Error Transient(const std::string& peer, const std::string& what) {
  return Error(kErrTryAgainLater, peer + ": " + what);
}

std::string ErrnoText(int error) { return std::strerror(error); }

int MillisUntil(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 60'000 ? 60'000 : static_cast<int>(left.count()) + 1;
}

// Waits until fd is ready for `events`; false on timeout (errno ETIMEDOUT) or error.
bool WaitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    const int timeout = MillisUntil(deadline);
    if (timeout == 0) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, timeout);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// A BIO over the non-blocking socket that sends with MSG_NOSIGNAL: a member that closes the
// connection must not kill the process with SIGPIPE (OpenSSL's socket BIO uses write(2)).
// EAGAIN becomes a retry that the caller waits out with poll.
int SocketOf(BIO* bio) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

int BioWrite(BIO* bio, const char* data, size_t size, size_t* written) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::send(SocketOf(bio), data, size, MSG_NOSIGNAL);
  if (n >= 0) {
    *written = static_cast<size_t>(n);
    return 1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(bio);
  return 0;
}

int BioRead(BIO* bio, char* data, size_t size, size_t* read) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::recv(SocketOf(bio), data, size, 0);
  if (n > 0) {
    *read = static_cast<size_t>(n);
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(bio);
  }
  return 0;  // end of stream, or an error left in errno
}

long BioCtrl(BIO* /*bio*/, int cmd, long /*num*/, void* /*ptr*/) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* SocketMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nodegate-socket");
    BIO_meth_set_write_ex(m, BioWrite);
    BIO_meth_set_read_ex(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

// The addresses to try for an endpoint: its literal address, or what its name resolves to
// (lib/net/name_lookup.h in the executables: /etc/hosts, then DNS).
Result<std::vector<sockaddr_storage>> Addresses(const Endpoint& endpoint) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = endpoint.host_is_ip() ? AI_NUMERICHOST : 0;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(endpoint.port);
  const int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return Transient(endpoint.url,
                     std::string("cannot resolve ") + endpoint.host + ": " + ::gai_strerror(rc));
  }
  std::vector<sockaddr_storage> out;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen <= sizeof(sockaddr_storage)) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      out.push_back(s);
    }
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Transient(endpoint.url, "no address for " + endpoint.host);
  return out;
}

Result<sys::UniqueFd> ConnectTo(const sockaddr_storage& address, const std::string& peer,
                                Deadline deadline) {
  sys::UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Transient(peer, "socket: " + ErrnoText(errno));
  const int one = 1;
  (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const socklen_t length =
      address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    if (errno != EINPROGRESS) return Transient(peer, "connect: " + ErrnoText(errno));
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      return Transient(peer,
                       errno == ETIMEDOUT ? "connect: timed out" : "connect: " + ErrnoText(errno));
    }
    int error = 0;
    socklen_t size = sizeof(error);
    (void)::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size);
    if (error != 0) return Transient(peer, "connect: " + ErrnoText(error));
  }
  return fd;
}

std::string PeerText(const Endpoint& endpoint) { return endpoint.url; }

}  // namespace

Connection::~Connection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

Result<std::unique_ptr<Connection>> Connection::Open(const Endpoint& endpoint, TlsContext* tls,
                                                     Deadline deadline) {
  NG_ASSIGN_OR_RETURN(std::vector<sockaddr_storage> addresses, Addresses(endpoint));
  Error last(kErrTryAgainLater, endpoint.url + ": no address");
  for (const auto& address : addresses) {
    auto fd = ConnectTo(address, PeerText(endpoint), deadline);
    if (!fd.ok()) {
      last = fd.error();
      continue;
    }
    std::unique_ptr<Connection> connection(
        new Connection(std::move(fd).value(), PeerText(endpoint)));
    if (tls != nullptr) {
      NG_RETURN_IF_ERROR(connection->Handshake(endpoint, *tls, deadline));
    }
    return connection;
  }
  return last;
}

Status Connection::Handshake(const Endpoint& endpoint, TlsContext& tls, Deadline deadline) {
  ERR_clear_error();
  ssl_ = SSL_new(tls.get());
  if (ssl_ == nullptr) return Error(kErrInternal, "TLS: " + TakeOpenSslErrors());
  BIO* bio = BIO_new(SocketMethod());
  if (bio == nullptr) return Error(kErrInternal, "TLS: " + TakeOpenSslErrors());
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd_.get())));
  SSL_set_bio(ssl_, bio, bio);
  // The name the certificate must carry: the endpoint's IP address (an IP SAN) or host name.
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
  if (endpoint.host_is_ip()) {
    X509_VERIFY_PARAM_set1_ip_asc(param, endpoint.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, endpoint.host.c_str(), 0);
    SSL_set_tlsext_host_name(ssl_, endpoint.host.c_str());
  }
  for (;;) {
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return OkStatus();
    const int error = SSL_get_error(ssl_, rc);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      if (!WaitFor(fd_.get(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) {
        return Transient(peer_, "TLS handshake: timed out");
      }
      continue;
    }
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      ERR_clear_error();
      // Not a member's passing trouble: this CA or this name will never verify.
      return Error(kErrInvalidConfig, peer_ + ": TLS: the server's certificate does not verify (" +
                                          X509_verify_cert_error_string(verify) + ")");
    }
    const std::string detail = error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                                   ? (errno != 0 ? ErrnoText(errno) : "connection closed")
                                   : TakeOpenSslErrors();
    ERR_clear_error();
    return Transient(peer_, "TLS handshake: " + detail);
  }
}

Status Connection::WriteAll(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    if (ssl_ != nullptr) {
      size_t written = 0;
      const int rc = SSL_write_ex(ssl_, data.data(), data.size(), &written);
      if (rc == 1) {
        data.remove_prefix(written);
        continue;
      }
      const int error = SSL_get_error(ssl_, rc);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        if (!WaitFor(fd_.get(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) {
          timed_out_ = true;
          return Transient(peer_, "write: timed out");
        }
        continue;
      }
      ERR_clear_error();
      return Transient(peer_, "write: " + (errno != 0 ? ErrnoText(errno) : "TLS error"));
    }
    const ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!WaitFor(fd_.get(), POLLOUT, deadline)) {
        timed_out_ = true;
        return Transient(peer_, "write: timed out");
      }
      continue;
    }
    return Transient(peer_, "write: " + ErrnoText(errno));
  }
  return OkStatus();
}

Result<size_t> Connection::ReadSome(char* buffer, size_t size, Deadline deadline) {
  for (;;) {
    if (ssl_ != nullptr) {
      size_t read = 0;
      errno = 0;
      const int rc = SSL_read_ex(ssl_, buffer, size, &read);
      if (rc == 1) return read;
      const int error = SSL_get_error(ssl_, rc);
      if (error == SSL_ERROR_ZERO_RETURN) return size_t{0};
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        if (!WaitFor(fd_.get(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) {
          timed_out_ = true;
          return Transient(peer_, "no answer in time");
        }
        continue;
      }
      if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) {
        return size_t{0};  // closed without close_notify: the end of the stream all the same
      }
      const std::string detail = errno != 0 ? ErrnoText(errno) : TakeOpenSslErrors();
      ERR_clear_error();
      return Transient(peer_, "read: " + detail);
    }
    const ssize_t n = ::recv(fd_.get(), buffer, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!WaitFor(fd_.get(), POLLIN, deadline)) {
        timed_out_ = true;
        return Transient(peer_, "no answer in time");
      }
      continue;
    }
    return Transient(peer_, "read: " + ErrnoText(errno));
  }
}

Result<HttpResponse> Connection::RoundTrip(std::string_view request, Deadline deadline,
                                           size_t max_body) {
  NG_RETURN_IF_ERROR(WriteAll(request, deadline));
  ResponseParser parser(max_body);
  char buffer[16384];
  while (!parser.done()) {
    NG_ASSIGN_OR_RETURN(size_t n, ReadSome(buffer, sizeof(buffer), deadline));
    if (n == 0) {
      Status end = parser.Eof();
      if (!end.ok()) return Transient(peer_, end.error().msg);
      break;
    }
    Status fed = parser.Feed(std::string_view(buffer, n));
    if (!fed.ok()) return Error(fed.error().code, peer_ + ": " + fed.error().msg);
  }
  used_ = true;
  return parser.Take();
}

}  // namespace nodegate::etcd
