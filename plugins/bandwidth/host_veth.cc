#include "plugins/bandwidth/host_veth.h"

#include "lib/sys/netns.h"

namespace nodegate::bandwidth {

Result<int> ContainerVethPeerIndex(const std::string& netns_path, const std::string& ifname) {
  NG_ASSIGN_OR_RETURN(auto in_container, sys::NetnsScope::Enter(netns_path));
  // A socket opened here stays bound to the container namespace.
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  auto peer = netlink::VethPeerIndex(sock, ifname);
  if (!peer.ok() || *peer <= 0) {
    const std::string why = peer.ok() ? "no peer index" : peer.error().msg;
    return Error(kErrInvalidConfig, "container interface " + ifname + " has no veth peer: " + why);
  }
  return *peer;
}

Result<netlink::LinkInfo> FindHostVeth(netlink::Socket& host, const std::string& netns_path,
                                       const std::string& ifname,
                                       const std::vector<cni::Interface>& interfaces) {
  if (interfaces.empty()) {
    return Error(kErrInvalidConfig, "no interfaces provided");
  }
  NG_ASSIGN_OR_RETURN(int peer_index, ContainerVethPeerIndex(netns_path, ifname));
  NG_ASSIGN_OR_RETURN(std::optional<netlink::LinkInfo> link,
                      netlink::GetLinkByIndex(host, peer_index));
  if (!link) {
    return Error(kErrInvalidConfig,
                 "veth peer with index " + std::to_string(peer_index) + " is not in host ns");
  }
  for (const cni::Interface& iface : interfaces) {
    if (iface.sandbox.empty() && iface.name == link->name) {
      return *link;
    }
  }
  return Error(kErrInvalidConfig, "no veth peer of container interface found in host ns");
}

}  // namespace nodegate::bandwidth
