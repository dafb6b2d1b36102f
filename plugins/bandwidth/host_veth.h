#pragma once
// Finds the host end of the container's veth the way the reference does: read the peer
// ifindex of CNI_IFNAME inside the container namespace (IFLA_LINK, else ethtool), look that
// index up in the node namespace, and require its name to be a prevResult interface without
// a sandbox. Errors keep the reference's messages, with code 7 (the chain's input does not
// describe a veth this plugin can shape) or 8 (the namespace cannot be entered).

#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/types.h"
#include "lib/netlink/link.h"
#include "lib/netlink/socket.h"

namespace nodegate::bandwidth {

// The peer ifindex of `ifname` in `netns_path` (a veth check included).
Result<int> ContainerVethPeerIndex(const std::string& netns_path, const std::string& ifname);

// Full discovery against prevResult's interfaces. `host` is a socket in the node namespace.
Result<netlink::LinkInfo> FindHostVeth(netlink::Socket& host, const std::string& netns_path,
                                       const std::string& ifname,
                                       const std::vector<cni::Interface>& interfaces);

}  // namespace nodegate::bandwidth
