#pragma once
// SHA-512 as lowercase hex, and the reference plugins' hash-derived kernel names. Those names
// are a compatibility surface: the reference cleans up what we create and vice versa.
//
// SHA-512 is our own FIPS 180-4 code, not OpenSSL's: OpenSSL 3 loads its provider
// configuration on first use, about 5 ms of CPU in every plugin process.

#include <string>
#include <string_view>

namespace nodegate {

std::string Sha512Hex(std::string_view data);

// prefix + sha512hex(network_name + container_id), whole string cut to max_length.
//   HashedName("CNI-DN-", "rnet", "ctr1", 28) == "CNI-DN-6ef8579d92ac413d65a3e"
//   HashedName("bwp", "rnet", "ctr1", 15)     == "bwp6ef8579d92ac"
std::string HashedName(std::string_view prefix, std::string_view network_name,
                       std::string_view container_id, size_t max_length);

}  // namespace nodegate
