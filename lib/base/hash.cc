#include "lib/base/hash.h"

#include <openssl/evp.h>

namespace nodegate {

std::string Sha512Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha512(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string HashedName(std::string_view prefix, std::string_view network_name,
                       std::string_view container_id, size_t max_length) {
  std::string input(network_name);
  input += container_id;
  std::string name(prefix);
  name += Sha512Hex(input);
  if (name.size() > max_length) {
    name.resize(max_length);
  }
  return name;
}

}  // namespace nodegate
