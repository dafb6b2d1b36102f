#include "lib/base/hash.h"

namespace nodegate {

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
