#pragma once
// File: plugins/bandwidth/sha512.h
//
// SHA-512 (FIPS 180-4) for the ifb name, without OpenSSL. Why not lib/base's Sha512Hex: with
// OpenSSL 3 the EVP digest fetch loads the provider configuration on first use, which costs
// about 5 ms of CPU per process, and loading libcrypto.so another 2 ms: a third of a whole
// bandwidth ADD. The result is identical (tests compare it with nodegate::HashedName).

#include <string>
#include <string_view>

namespace nodegate::bandwidth {

// Lowercase hex digest of `data`.
std::string Sha512Hex(std::string_view data);

}  // namespace nodegate::bandwidth
