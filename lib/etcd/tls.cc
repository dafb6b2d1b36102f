#include "lib/etcd/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <vector>

#include "lib/sys/io.h"

namespace nodegate::etcd {
namespace {

// PEM files of a few certificates; a larger file is not a CA bundle of ours.
constexpr size_t kMaxPemBytes = 4 << 20;

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Result<std::string> ReadPem(const std::string& what, const std::string& path) {
  auto content = sys::ReadRegularFile(path, kMaxPemBytes);
  if (!content.ok()) return content.error().WithContext(what);
  return content;
}

// Every certificate of a PEM text, in order.
Result<std::vector<X509Ptr>> Certificates(const std::string& what, const std::string& path) {
  NG_ASSIGN_OR_RETURN(std::string pem, ReadPem(what, path));
  BioPtr bio = MemoryBio(pem);
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the text reads as an error
  if (certs.empty()) {
    return Error(kErrInvalidConfig, what + " " + path + ": no PEM certificate in the file");
  }
  return certs;
}

}  // namespace

std::string TakeOpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown TLS error" : out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<std::unique_ptr<TlsContext>> TlsContext::Create(const TlsFiles& files) {
  if (files.ca_file.empty()) {
    return Error(kErrInvalidConfig, "etcd.caFile is required for https endpoints");
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return Error(kErrInvalidConfig, "etcd.certFile and etcd.keyFile go together");
  }
  // The first initialisation decides: without the config file, no engine or provider is ever
  // loaded from disk by a later implicit one.
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  ERR_clear_error();
  NG_ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, Certificates("etcd.caFile", files.ca_file));
  SSL_CTX* raw = SSL_CTX_new(TLS_client_method());
  if (raw == nullptr) return Error(kErrInternal, "TLS: " + TakeOpenSslErrors());
  std::unique_ptr<TlsContext> ctx(new TlsContext(raw));
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_options(raw, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  X509_STORE* store = SSL_CTX_get_cert_store(raw);
  for (const auto& ca : cas) {
    if (X509_STORE_add_cert(store, ca.get()) != 1) {
      ERR_clear_error();  // the same CA twice in the file
    }
  }
  if (files.cert_file.empty()) return ctx;

  NG_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, Certificates("etcd.certFile", files.cert_file));
  if (SSL_CTX_use_certificate(raw, chain.front().get()) != 1) {
    return Error(kErrInvalidConfig,
                 "etcd.certFile " + files.cert_file + ": " + TakeOpenSslErrors());
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(raw, chain[i].get()) != 1) {
      return Error(kErrInvalidConfig,
                   "etcd.certFile " + files.cert_file + ": " + TakeOpenSslErrors());
    }
  }
  NG_ASSIGN_OR_RETURN(std::string key_pem, ReadPem("etcd.keyFile", files.key_file));
  BioPtr bio = MemoryBio(key_pem);
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  // The key's bytes are not needed any more.
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
  if (!key) {
    ERR_clear_error();
    return Error(kErrInvalidConfig,
                 "etcd.keyFile " + files.key_file + ": no unencrypted PEM private key in the file");
  }
  if (SSL_CTX_use_PrivateKey(raw, key.get()) != 1 || SSL_CTX_check_private_key(raw) != 1) {
    ERR_clear_error();
    return Error(kErrInvalidConfig, "etcd.keyFile " + files.key_file +
                                        " does not match etcd.certFile " + files.cert_file);
  }
  return ctx;
}

}  // namespace nodegate::etcd
