#pragma once
// Base64 with the standard alphabet (RFC 4648 section 4), as libcni's cache files and
// kubeconfig's *-data fields write it.

#include <optional>
#include <string>
#include <string_view>

namespace nodegate {

// Padded to a multiple of four characters.
std::string Base64Encode(std::string_view data);

enum class Base64Input {
  kStrict,   // whole quanta, padding only at the end, nothing else: what we wrote ourselves
  kLenient,  // whitespace (line breaks of a pasted kubeconfig) skipped, padding optional
};

// nullopt when `text` is not base64 of that kind.
std::optional<std::string> Base64Decode(std::string_view text,
                                        Base64Input kind = Base64Input::kStrict);

}  // namespace nodegate
