#pragma once
// The result an IPAM plugin of this suite prints (host-local, cluster-ipam): one address per
// range set, in range-set order, as {address: <ip>/<prefix of its range's subnet>, gateway:
// that range's gateway} with no interface index, then the config's routes and dns. Built as
// the 1.x model; the dispatcher prints it in the config's version.

#include <string>
#include <utility>
#include <vector>

#include "ipam/range.h"
#include "lib/cni/types.h"
#include "lib/net/ip.h"

namespace nodegate::ipam {

// An address and the range of the config that holds it.
struct AddressInRange {
  net::IpAddress ip;
  const Range* range;
};

cni::CniResult IpamResult(const std::string& cni_version,
                          const std::vector<AddressInRange>& addresses,
                          const std::vector<cni::Route>& routes, const cni::Dns& dns);

}  // namespace nodegate::ipam
