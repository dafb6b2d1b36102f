#include "ipam/store.h"

#include "lib/cni/skel.h"

namespace nodegate::ipam {
namespace {

std::string_view TrimSpace(std::string_view s) {
  const char* kSpace = " \t\r\n\v\f";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) {
    return {};
  }
  const size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::string EncodeOwner(const Owner& owner) {
  if (owner.legacy()) {
    return owner.container_id;
  }
  return owner.container_id + "\r\n" + owner.ifname;
}

std::optional<Owner> DecodeOwner(std::string_view content) {
  const std::string_view trimmed = TrimSpace(content);
  if (trimmed.empty()) {
    return std::nullopt;
  }
  Owner owner;
  const size_t crlf = trimmed.find("\r\n");
  if (crlf == std::string_view::npos) {
    owner.container_id = std::string(trimmed);
  } else {
    owner.container_id = std::string(trimmed.substr(0, crlf));
    owner.ifname = std::string(trimmed.substr(crlf + 2));
    if (!cni::ValidateInterfaceName(owner.ifname).ok()) {
      return std::nullopt;
    }
  }
  if (!cni::ValidateContainerId(owner.container_id).ok()) {
    return std::nullopt;
  }
  return owner;
}

}  // namespace nodegate::ipam
