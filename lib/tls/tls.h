#pragma once
// TLS for the API server's clients and the webhook's server, on OpenSSL (linked from
// libssl.a/libcrypto.a): the serving certificate, reloaded when its files change (cert-manager and
// kubelet-projected secrets replace them in place), and the API client's context (the cluster's CA,
// an optional client certificate, the server name checked). OpenSSL is initialised without reading
// openssl.cnf, so no engine, provider or configuration is loaded from disk at run time.

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lib/base/result.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace nodegate::tls {

using SslContext = std::shared_ptr<ssl_ctx_st>;

// InitOpenSsl: before the first use of OpenSSL; idempotent and thread-safe.
void InitOpenSsl();

// OpenSslErrors: the thread's queued OpenSSL errors as text (and the queue cleared).
std::string OpenSslErrors();

// FileStamp: what tells that a file was replaced or rewritten.
struct FileStamp {
  ino_t inode = 0;
  off_t size = 0;
  struct timespec mtime = {};
  bool operator==(const FileStamp& o) const {
    return inode == o.inode && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

// ServerCertificate: a server context for --tls-cert and --tls-key. Current() is called for
// every new connection; at most once a second it looks at both files and, when either has
// changed (inode, size or modification time), loads them again. A pair that does not load
// (half-written, key and certificate not matching) keeps the previous context in service.
class ServerCertificate {
 public:
  static Result<std::unique_ptr<ServerCertificate>> Load(std::string cert_path,
                                                         std::string key_path);
  SslContext Current();
  // Reloads: how many times a changed pair was loaded.
  int reloads() const { return reloads_; }

 private:
  ServerCertificate(std::string cert_path, std::string key_path)
      : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}
  Result<SslContext> Build() const;
  std::pair<FileStamp, FileStamp> Stamps() const;

  const std::string cert_path_;
  const std::string key_path_;
  std::mutex mu_;
  SslContext current_;
  std::pair<FileStamp, FileStamp> stamps_;
  std::chrono::steady_clock::time_point last_check_;
  int reloads_ = 0;
};

struct ClientTlsConfig {
  std::string ca_pem;    // trusted CAs; empty: the system's are NOT used, nothing is
  std::string cert_pem;  // client certificate (optional)
  std::string key_pem;   // its key
  bool insecure_skip_verify = false;
};

// NotAfter: when the certificate a server context serves expires.
std::optional<std::chrono::system_clock::time_point> NotAfter(const SslContext& context);

// MakeClientContext: a context that verifies the server's chain against ca_pem.
Result<SslContext> MakeClientContext(const ClientTlsConfig& config);

}  // namespace nodegate::tls
