#pragma once
// The address a host port is held on, and when two holders of one protocol and port collide.
// "Every address" reaches differently for different holders, and each caller names its sense:
//   kOwnFamily    a DNAT rule (portmap's mappings, in any layout) matches one family: a mapping
//                 on every IPv4 address leaves the port free on IPv6 (portmap/conflicts.h);
//   kEveryFamily  a socket on "::" also takes IPv4 (dual-stack), and `nodegate ports` judges
//                 sockets, mappings and pod specs on one footing, so either family's wildcard
//                 takes the port on every address (ports/claims.h).
// The scheduler's rule, where only 0.0.0.0 is a wildcard, stays beside the predicate it serves
// (admit/framework/host_port_set.h): it follows kube-scheduler to the letter.
//
//   const net::HostAddress any4{net::Family::kV4, std::nullopt};
//   net::HostAddressesOverlap(any4, {net::Family::kV6, ip6}, net::WildcardReach::kOwnFamily);

#include <optional>
#include <string_view>

#include "lib/net/ip.h"

namespace nodegate::net {

struct HostAddress {
  Family family = Family::kV4;
  std::optional<IpAddress> ip;  // nullopt or the all-zeros address: every address of `family`

  bool every() const { return !ip || ip->IsZero(); }
};

enum class WildcardReach { kOwnFamily, kEveryFamily };

// Whether a port held on `a` and the same protocol and port held on `b` collide.
bool HostAddressesOverlap(const HostAddress& a, const HostAddress& b, WildcardReach reach);

// kEveryFamily on canonical address text (IpAddress::ToString(): "0.0.0.0", "::", "10.0.0.5"),
// where equal text is the same address: what `nodegate ports` compares its many claims by,
// without parsing them again.
bool CanonicalHostIpsOverlap(std::string_view a, std::string_view b);

}  // namespace nodegate::net
