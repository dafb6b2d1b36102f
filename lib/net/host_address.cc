#include "lib/net/host_address.h"

namespace nodegate::net {

bool HostAddressesOverlap(const HostAddress& a, const HostAddress& b, WildcardReach reach) {
  if (reach == WildcardReach::kOwnFamily && a.family != b.family) return false;
  if (a.every() || b.every()) return true;
  return *a.ip == *b.ip;
}

}  // namespace nodegate::net
