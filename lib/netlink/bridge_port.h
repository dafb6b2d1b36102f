#pragma once
// A bridge port's own settings, through AF_BRIDGE RTM_SETLINK/RTM_DELLINK/RTM_GETLINK as
// iproute2's `bridge link` and `bridge vlan` send them:
//
//   NG_RETURN_IF_ERROR(SetBridgePortFlags(sock, veth.index, {.hairpin = true}));
//   NG_RETURN_IF_ERROR(AddBridgeVlans(sock, veth.index, {{.vid = 100, .pvid = true,
//                                                          .untagged = true}}));
//   NG_ASSIGN_OR_RETURN(std::vector<BridgeVlan> vlans, ListBridgeVlans(sock, veth.index));

#include <cstdint>
#include <vector>

#include "lib/base/result.h"
#include "lib/netlink/socket.h"

namespace nodegate::netlink {

struct BridgePortFlags {
  bool hairpin = false;   // IFLA_BRPORT_MODE: frames may leave through the port they came in
  bool isolated = false;  // IFLA_BRPORT_ISOLATED: no traffic to other isolated ports
};
// Sets both flags (as the reference sets each, on or off, on every port it adds).
Status SetBridgePortFlags(Socket& sock, int index, const BridgePortFlags& flags);

struct BridgeVlan {
  uint16_t vid = 0;
  bool pvid = false;      // frames arriving untagged get this VLAN
  bool untagged = false;  // frames of this VLAN leave the port untagged
  bool operator==(const BridgeVlan&) const = default;
};
// Adds (or updates) VLANs on a port, one message; the bridge's VLAN table (master).
Status AddBridgeVlans(Socket& sock, int index, const std::vector<BridgeVlan>& vlans);
// Removes VLANs from a port; one that is not there is no error.
Status DeleteBridgeVlans(Socket& sock, int index, const std::vector<uint16_t>& vids);
// A port's VLANs, in the kernel's order (one AF_BRIDGE dump, filtered to `index`).
Result<std::vector<BridgeVlan>> ListBridgeVlans(Socket& sock, int index);

}  // namespace nodegate::netlink
