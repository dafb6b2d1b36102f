#include "lib/tls/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <utility>

#include "lib/base/result.h"

namespace nodegate::tls {
namespace {

SslContext Wrap(SSL_CTX* ctx) { return SslContext(ctx, SSL_CTX_free); }

// Hardened defaults for both sides: TLS 1.2 at least (the API server's client speaks 1.2 and
// 1.3), no renegotiation, no compression.
void CommonOptions(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
}

}  // namespace

void InitOpenSsl() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The first initialisation decides: with NO_LOAD_CONFIG, later implicit ones (SSL_CTX_new)
    // never read openssl.cnf, which could load engines or providers from disk.
    OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_LOAD_SSL_STRINGS |
                         OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
                     nullptr);
  });
}

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown TLS error" : out;
}

Result<std::unique_ptr<ServerCertificate>> ServerCertificate::Load(std::string cert_path,
                                                                   std::string key_path) {
  InitOpenSsl();
  std::unique_ptr<ServerCertificate> cert(
      new ServerCertificate(std::move(cert_path), std::move(key_path)));
  cert->stamps_ = cert->Stamps();
  NG_ASSIGN_OR_RETURN(auto ctx, cert->Build());
  cert->current_ = std::move(ctx);
  cert->last_check_ = std::chrono::steady_clock::now();
  return cert;
}

std::pair<FileStamp, FileStamp> ServerCertificate::Stamps() const {
  auto stamp = [](const std::string& path) {
    FileStamp s;
    struct stat st = {};
    if (::stat(path.c_str(), &st) == 0) {
      s.inode = st.st_ino;
      s.size = st.st_size;
      s.mtime = st.st_mtim;
    }
    return s;
  };
  return {stamp(cert_path_), stamp(key_path_)};
}

Result<SslContext> ServerCertificate::Build() const {
  ERR_clear_error();
  SslContext ctx = Wrap(SSL_CTX_new(TLS_server_method()));
  if (!ctx) {
    return Error(kErrInvalidConfig, "TLS: " + OpenSslErrors());
  }
  CommonOptions(ctx.get());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_path_.c_str()) != 1) {
    return Error(kErrInvalidConfig, cert_path_ + ": " + OpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_path_.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error(kErrInvalidConfig, key_path_ + ": " + OpenSslErrors());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Error(kErrInvalidConfig,
                 key_path_ + ": does not match " + cert_path_ + ": " + OpenSslErrors());
  }
  // One session cache per context: a rotated certificate starts with an empty one.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
  return ctx;
}

SslContext ServerCertificate::Current() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ >= std::chrono::seconds(1)) {
    last_check_ = now;
    auto stamps = Stamps();
    if (!(stamps == stamps_)) {
      auto ctx = Build();
      if (ctx.ok()) {
        current_ = std::move(ctx).value();
        stamps_ = stamps;
        ++reloads_;
      }
      // A pair that does not load yet (one file replaced, the other not) is tried again at
      // the next check: stamps_ stays as it was.
    }
  }
  return current_;
}

Result<SslContext> MakeClientContext(const ClientTlsConfig& config) {
  InitOpenSsl();
  ERR_clear_error();
  SslContext ctx = Wrap(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    return Error(kErrInvalidConfig, "TLS: " + OpenSslErrors());
  }
  CommonOptions(ctx.get());
  if (config.insecure_skip_verify) {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  } else {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    BioPtr bio = MemoryBio(config.ca_pem);
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, cert);
      X509_free(cert);
      ++added;
    }
    ERR_clear_error();  // the end of the PEM text reads as an error
    if (added == 0) {
      return Error(kErrInvalidConfig, "certificate authority: no PEM certificate found");
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!config.cert_pem.empty() || !config.key_pem.empty()) {
    BioPtr cert_bio = MemoryBio(config.cert_pem);
    X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr || SSL_CTX_use_certificate(ctx.get(), cert) != 1) {
      X509_free(cert);
      return Error(kErrInvalidConfig, "client certificate: " + OpenSslErrors());
    }
    X509_free(cert);
    BioPtr key_bio = MemoryBio(config.key_pem);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr || SSL_CTX_use_PrivateKey(ctx.get(), key) != 1) {
      EVP_PKEY_free(key);
      return Error(kErrInvalidConfig, "client key: " + OpenSslErrors());
    }
    EVP_PKEY_free(key);
  }
  return ctx;
}

std::optional<std::chrono::system_clock::time_point> NotAfter(const SslContext& context) {
  if (!context) {
    return std::nullopt;
  }
  X509* cert = SSL_CTX_get0_certificate(context.get());
  if (cert == nullptr) {
    return std::nullopt;
  }
  struct tm tm = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace nodegate::tls
