#pragma once
// macspoofchk: frames entering the bridge from the container's host veth must carry the
// container interface's MAC, as the reference's pkg/link/spoofcheck.go sets it up in nf_tables
// (written here over netlink, one batch, where the reference runs nft twice):
//
//   table bridge nat
//     chain PREROUTING { type filter hook prerouting priority -300; policy accept; }
//       iifname "<host veth>" jump cni-br-iface-<ID>-<ifname>       comment
//       "macspoofchk-<ID>-<ifname>"
//     chain cni-br-iface-<ID>-<ifname>
//       jump cni-br-iface-<ID>-<ifname>-mac                         comment ...
//     chain cni-br-iface-<ID>-<ifname>-mac
//       ether saddr <container MAC> return                          comment ...
//       drop                                                        comment ...
//
// The table and PREROUTING stay (other containers use them). DEL finds the PREROUTING rule by
// its comment; GC removes the chains whose host veth no longer exists (the chains do not name
// their network, so a dead veth is what tells a stale one).

#include <string>

#include "lib/base/result.h"

namespace nodegate::bridge {

struct SpoofCheck {
  std::string host_veth;
  std::string container_mac;  // "aa:bb:cc:dd:ee:ff"
  std::string container_id;
  std::string ifname;
};

Status SetupSpoofCheck(const SpoofCheck& check);
// Removes the attachment's rule and chains; nothing there is success.
Status TeardownSpoofCheck(const std::string& container_id, const std::string& ifname);
// CHECK: the chains and rules of `check` are in place (code 103).
Status CheckSpoofCheck(const SpoofCheck& check);
// GC: removes every attachment's chains whose host veth (the PREROUTING rule's iifname) is not
// a link of this namespace any more.
Status GcSpoofCheck();

}  // namespace nodegate::bridge
