#include "lib/net/host_address.h"

namespace nodegate::net {

bool HostAddressesOverlap(const HostAddress& a, const HostAddress& b, WildcardReach reach) {
  if (reach == WildcardReach::kOwnFamily && a.family != b.family) return false;
  if (a.every() || b.every()) return true;
  return *a.ip == *b.ip;
}

bool CanonicalHostIpsOverlap(std::string_view a, std::string_view b) {
  const auto every = [](std::string_view ip) { return ip == "0.0.0.0" || ip == "::"; };
  return a == b || every(a) || every(b);
}

}  // namespace nodegate::net
