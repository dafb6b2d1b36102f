#pragma once
// The node side of an attachment, through route netlink sockets (lib/netlink):
//
//   EnsureBridge        setupBridge/ensureBridge: create the bridge unless a link of that name
//                       exists (which must then be a bridge), promiscuous when asked, accept_ra
//                       off, up
//   CreateVethPair      SetupVeth: "veth<8 hex>" in the node, the container end created directly
//                       in the container's namespace (another random name when the node's is
//                       taken; an error when the container's is)
//   AttachPort          setupVeth's host side: accept_ra off, enslaved, hairpin and isolation
//                       flags, VLANs, up
//   EnsureVlanGateway   ensureVlanInterface: the "<bridge>.<vlan>" veth that holds the gateway
//                       address of a VLAN, its peer a port of the VLAN
//   EnsureGatewayAddress ensureAddr: the gateway on the bridge (forceAddress replacing other
//                       addresses), and the bridge's MAC pinned as the reference pins it
//   RemoveContainerInterface  DEL's ip.DelLinkByName in the container, the deletion itself
//                       left to a detached child
//
// Sysctls are written in the calling thread's namespace: callers run these in the node's.

#include <string>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netlink/link.h"
#include "lib/netlink/socket.h"
#include "plugins/bridge/config.h"

namespace nodegate::bridge {

// The bridge as found or made (its MAC as it was then: what EnsureGatewayAddress pins).
Result<netlink::LinkInfo> EnsureBridge(netlink::Socket& node, const BridgeConfig& config);

struct VethPair {
  netlink::LinkInfo host;       // in the node
  netlink::LinkInfo container;  // in the container
};
// Errors: code 100; a container name already taken reads as the reference's
// `container veth name provided (<ifname>) already exists`.
Result<VethPair> CreateVethPair(netlink::Socket& node, netlink::Socket& container,
                                int container_netns_fd, const std::string& ifname,
                                const BridgeConfig& config);

struct PortSettings {
  bool hairpin = false;
  bool isolated = false;
  uint16_t vlan = 0;
  std::vector<uint16_t> trunk;
  bool preserve_default_vlan = false;
};
PortSettings PortSettingsOf(const BridgeConfig& config);

// The host end of a pair: accept_ra off, enslaved to `bridge`, flags, VLANs, up.
Status AttachPort(netlink::Socket& node, const netlink::LinkInfo& port, int bridge,
                  const PortSettings& settings);

// The "<bridge>.<vlan>" interface (made when missing), up.
Result<netlink::LinkInfo> EnsureVlanGateway(netlink::Socket& node, const netlink::LinkInfo& bridge,
                                            const BridgeConfig& config);

// `gateway` on `link`; `pin_mac`, when not empty, is set as the link's MAC after an address was
// added (the reference's bridge MAC, read before its first port changed it).
Status EnsureGatewayAddress(netlink::Socket& node, const netlink::LinkInfo& link,
                            const net::IpPrefix& gateway, bool force_address,
                            const std::string& pin_mac);

// net.ipv4.ip_forward or net.ipv6.conf.all.forwarding to 1 (read first, as the reference).
Status EnableForwarding(net::Family family);

// The name DEL gives the container's interface `ifname` while its pair waits for deletion:
// "ngdel" and the first 10 hex digits of sha512(ifname). It lives in the container's namespace,
// so the interface's name alone makes it unique there.
std::string RetiredInterfaceName(const std::string& ifname);

// DEL: removes the container's interface `ifname` (`container` is a socket in its namespace),
// and with it the pair, the port and the port's rules on the node. Deleting a net device
// makes the caller wait for an RCU barrier, most of a DEL (longer while another deletion's
// barrier runs, such as the ifb bandwidth's DEL leaves to its helper). So when detached work
// is allowed the interface is taken out of service at once, down and renamed
// RetiredInterfaceName (its name is free for a new ADD right away), and a detached child
// deletes it a moment later; otherwise, or when it is no veth, it is deleted here. A pair a
// killed DEL retired but did not hand off is deleted here. Already gone is success.
Status RemoveContainerInterface(netlink::Socket& container, const std::string& ifname);

}  // namespace nodegate::bridge
