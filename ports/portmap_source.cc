#include "ports/portmap_source.h"

#include <set>

#include "plugins/portmap/installed_mappings.h"

namespace nodegate::ports {
namespace {

std::string UpperProtocol(portmap::Protocol protocol) {
  switch (protocol) {
    case portmap::Protocol::kTcp:
      return "TCP";
    case portmap::Protocol::kUdp:
      return "UDP";
    case portmap::Protocol::kSctp:
      return "SCTP";
  }
  return "TCP";
}

MappedClaim ToClaim(const portmap::InstalledMapping& m) {
  MappedClaim claim;
  // A mapping without a host IP takes every local address of its family.
  const std::string wildcard = m.family == net::Family::kV6 ? "::" : "0.0.0.0";
  claim.key = {m.host_ip ? m.host_ip->ToString() : wildcard, UpperProtocol(m.protocol),
               m.host_port};
  claim.layout = m.layout;
  claim.container_id = m.container_id;
  claim.network = m.network;
  claim.target = m.target;
  return claim;
}

}  // namespace

MappedSource PortmapMappedSource() {
  return [](const PortFilter& ports) -> Result<std::vector<MappedClaim>> {
    std::set<portmap::PortKey> keys;
    for (const int port : ports.value_or(std::set<int>{})) {
      for (const auto family : {net::Family::kV4, net::Family::kV6}) {
        for (const auto protocol :
             {portmap::Protocol::kTcp, portmap::Protocol::kUdp, portmap::Protocol::kSctp}) {
          keys.insert({family, protocol, port});
        }
      }
    }
    NG_ASSIGN_OR_RETURN(auto mappings, ports ? portmap::ListInstalledMappings(keys)
                                             : portmap::ListInstalledMappings());
    std::vector<MappedClaim> claims;
    claims.reserve(mappings.size());
    for (const portmap::InstalledMapping& m : mappings) {
      claims.push_back(ToClaim(m));
    }
    return claims;
  };
}

}  // namespace nodegate::ports
