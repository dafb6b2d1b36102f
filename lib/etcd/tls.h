#pragma once
// The client side of TLS to etcd, on OpenSSL linked from its static archives (libssl.a,
// libcrypto.a): the cluster's CA (only it is trusted, never the system's), and the client
// certificate and key etcd's --client-cert-auth asks for. OpenSSL is initialised without
// reading openssl.cnf, so nothing is loaded from disk beyond the three files.
//
// The files are read and checked when the context is created, so a missing or unreadable file
// is a configuration error before any connection: code 5 when a file cannot be read, 7 when
// it holds no certificate or key, or the key does not match the certificate.

#include <memory>
#include <string>

#include "lib/base/result.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace nodegate::etcd {

struct TlsFiles {
  std::string ca_file;    // PEM, one or more CA certificates
  std::string cert_file;  // PEM client certificate (chain), optional
  std::string key_file;   // PEM key of cert_file
};

class TlsContext {
 public:
  static Result<std::unique_ptr<TlsContext>> Create(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// The thread's queued OpenSSL errors as text (the queue cleared).
std::string TakeOpenSslErrors();

}  // namespace nodegate::etcd
