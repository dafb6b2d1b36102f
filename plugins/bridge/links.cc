#include "plugins/bridge/links.h"

#include <cctype>
#include <cerrno>

#include "lib/base/hash.h"
#include "lib/netlink/address.h"
#include "lib/netlink/bridge_port.h"
#include "lib/sys/detached.h"
#include "lib/sys/sysctl.h"
#include "plugins/bridge/plan.h"

namespace nodegate::bridge {
namespace {

constexpr int kVethNameAttempts = 10;
// The reference's pairs (vishvananda/netlink with a zero TxQLen) have a transmit queue length
// of 0 at both ends, not the kernel's 1000.
constexpr uint32_t kVethTxQueueLen = 0;
// One transmit and one receive queue from the start: the kernel's default (one per possible
// CPU, cut to one in use after registration) waits for two RCU grace periods per pair
// (lib/netlink/link.h). The reference's pairs differ only in `ip -d link`'s numtxqueues and
// numrxqueues (README).
constexpr uint32_t kVethQueues = 1;

// Best effort, as the reference: a kernel without IPv6 has no accept_ra to turn off.
void AcceptRaOff(const std::string& link) {
  (void)sys::EnsureSysctl("net/ipv6/conf/" + link + "/accept_ra", "0");
}

Result<netlink::LinkInfo> MustGet(netlink::Socket& sock, const std::string& name,
                                  const std::string& where) {
  NG_ASSIGN_OR_RETURN(auto link, netlink::GetLinkByName(sock, name));
  if (!link) return Error(kErrKernel, "failed to lookup \"" + name + "\" in " + where);
  return *link;
}

}  // namespace

Result<netlink::LinkInfo> EnsureBridge(netlink::Socket& node, const BridgeConfig& config) {
  const std::string what = "failed to create bridge \"" + config.bridge + "\"";
  // Looked up first: the bridge is there on every ADD but the node's first, and a create that
  // finds it would cost a round trip more.
  NG_ASSIGN_OR_RETURN(auto found, netlink::GetLinkByName(node, config.bridge));
  bool created = false;
  if (!found) {
    auto made = netlink::CreateBridge(
        node,
        {.name = config.bridge, .mtu = config.mtu, .vlan_filtering = config.vlan_filtering()});
    if (!made.ok()) {
      // The reference's words: `could not add "cni0": operation not supported` (Go's errno
      // text).
      std::string cause = made.error().msg;
      const std::string prefix = "create bridge " + config.bridge + ": ";
      if (cause.rfind(prefix, 0) == 0) cause.erase(0, prefix.size());
      if (!cause.empty()) cause[0] = static_cast<char>(std::tolower(cause[0]));
      return Error(made.error().code, what + ": could not add \"" + config.bridge + "\": " + cause);
    }
    created = *made;  // false: a concurrent ADD made it meanwhile
    NG_ASSIGN_OR_RETURN(found, netlink::GetLinkByName(node, config.bridge));
    if (!found) return Error(kErrKernel, what + ": could not lookup \"" + config.bridge + "\"");
  }
  if (found->kind != "bridge") {
    return Error(kErrKernel,
                 what + ": \"" + config.bridge + "\" already exists but is not a bridge");
  }
  AcceptRaOff(config.bridge);
  netlink::LinkChange change;
  if (config.promisc && !found->promisc) change.promisc = true;
  if (!found->up) change.up = true;
  // An MTU set again after creation is the user's (as the reference's bridges have it): the
  // bridge keeps it when its ports come and go.
  if (created && config.mtu != 0) change.mtu = config.mtu;
  if (change.promisc || change.up || change.mtu) {
    NG_RETURN_IF_ERROR(netlink::ChangeLink(node, found->index, change, what));
  }
  return *found;
}

Result<VethPair> CreateVethPair(netlink::Socket& node, netlink::Socket& container,
                                int container_netns_fd, const std::string& ifname,
                                const BridgeConfig& config) {
  for (int attempt = 0; attempt < kVethNameAttempts; ++attempt) {
    const std::string host_name = RandomVethName();
    NG_ASSIGN_OR_RETURN(const bool created,
                        netlink::CreateVethPair(node, {.name = host_name,
                                                       .peer_name = ifname,
                                                       .peer_netns_fd = container_netns_fd,
                                                       .mtu = config.mtu,
                                                       .peer_mac = config.mac,
                                                       .tx_queue_len = kVethTxQueueLen,
                                                       .queues = kVethQueues}));
    if (!created) {
      // Which name was taken: the container's is an error, the node's random one a retry.
      NG_ASSIGN_OR_RETURN(auto existing, netlink::GetLinkByName(container, ifname));
      if (existing) {
        return Error(kErrKernel, "container veth name provided (" + ifname + ") already exists");
      }
      continue;
    }
    VethPair pair;
    NG_ASSIGN_OR_RETURN(pair.host, MustGet(node, host_name, "the node"));
    auto peer = MustGet(container, ifname, "the container");
    if (!peer.ok()) {
      (void)netlink::DeleteLinkByIndex(node, pair.host.index);
      return peer.error();
    }
    pair.container = *peer;
    return pair;
  }
  return Error(kErrKernel, "failed to find a unique veth name");
}

PortSettings PortSettingsOf(const BridgeConfig& config) {
  return PortSettings{.hairpin = config.hairpin,
                      .isolated = config.port_isolation,
                      .vlan = config.vlan,
                      .trunk = config.trunk,
                      .preserve_default_vlan = config.preserve_default_vlan};
}

Status AttachPort(netlink::Socket& node, const netlink::LinkInfo& port, int bridge,
                  const PortSettings& settings) {
  AcceptRaOff(port.name);
  const std::string what = "failed to connect \"" + port.name + "\" to the bridge";
  NG_RETURN_IF_ERROR(netlink::ChangeLink(node, port.index, {.master = bridge}, what));
  NG_RETURN_IF_ERROR(netlink::SetBridgePortFlags(
      node, port.index, {.hairpin = settings.hairpin, .isolated = settings.isolated}));
  BridgeConfig vlans_only;
  vlans_only.vlan = settings.vlan;
  vlans_only.trunk = settings.trunk;
  const auto vlans = PortVlans(vlans_only);
  if (!vlans.empty() && !settings.preserve_default_vlan) {
    // removeDefaultVlan: what the bridge gave the new port (its default PVID) goes first.
    NG_ASSIGN_OR_RETURN(auto present, netlink::ListBridgeVlans(node, port.index));
    std::vector<uint16_t> vids;
    for (const auto& v : present) vids.push_back(v.vid);
    NG_RETURN_IF_ERROR(netlink::DeleteBridgeVlans(node, port.index, vids));
  }
  NG_RETURN_IF_ERROR(netlink::AddBridgeVlans(node, port.index, vlans));
  return netlink::ChangeLink(node, port.index, {.up = true},
                             "failed to set \"" + port.name + "\" up");
}

Result<netlink::LinkInfo> EnsureVlanGateway(netlink::Socket& node, const netlink::LinkInfo& bridge,
                                            const BridgeConfig& config) {
  const std::string name = config.VlanGatewayName();
  NG_ASSIGN_OR_RETURN(auto existing, netlink::GetLinkByName(node, name));
  if (existing) return *existing;
  const std::string what = "failed to create vlan interface \"" + name + "\"";
  for (int attempt = 0; attempt < kVethNameAttempts; ++attempt) {
    const std::string peer = RandomVethName();
    NG_ASSIGN_OR_RETURN(const bool created,
                        netlink::CreateVethPair(node, {.name = peer,
                                                       .peer_name = name,
                                                       .mtu = bridge.mtu,
                                                       .tx_queue_len = kVethTxQueueLen,
                                                       .queues = kVethQueues}));
    if (!created) {
      NG_ASSIGN_OR_RETURN(auto raced, netlink::GetLinkByName(node, name));
      if (raced) return *raced;  // a concurrent ADD made it
      continue;
    }
    NG_ASSIGN_OR_RETURN(auto port, MustGet(node, peer, "the node"));
    NG_RETURN_IF_ERROR(
        AttachPort(node, port, bridge.index,
                   {.vlan = config.vlan, .preserve_default_vlan = config.preserve_default_vlan}));
    NG_ASSIGN_OR_RETURN(auto gateway, MustGet(node, name, "the node"));
    NG_RETURN_IF_ERROR(netlink::ChangeLink(node, gateway.index, {.up = true}, what));
    gateway.up = true;
    return gateway;
  }
  return Error(kErrKernel, what + ": failed to find a unique veth name");
}

Status EnsureGatewayAddress(netlink::Socket& node, const netlink::LinkInfo& link,
                            const net::IpPrefix& gateway, bool force_address,
                            const std::string& pin_mac) {
  NG_ASSIGN_OR_RETURN(auto addresses, netlink::ListAddresses(node, link.index, gateway.family()));
  for (const netlink::Address& a : addresses) {
    if (a.prefix == gateway) return OkStatus();
    // One IPv4 address per bridge; IPv6 ones may coexist unless their subnets overlap.
    if (gateway.family() == net::Family::kV4 || a.prefix.Contains(gateway.address()) ||
        gateway.Contains(a.prefix.address())) {
      if (!force_address) {
        return Error(kErrKernel, "\"" + link.name + "\" already has an IP address different from " +
                                     gateway.ToString());
      }
      NG_RETURN_IF_ERROR(netlink::DeleteAddress(node, link.index, a.prefix));
    }
  }
  auto added = netlink::AddAddress(node, link.index, gateway);
  if (!added.ok()) {
    return added.error().WithContext("could not add IP address " + gateway.ToString() + " to \"" +
                                     link.name + "\"");
  }
  // The reference sets the bridge's MAC to what it read before the first port joined, so the
  // bridge keeps that address instead of following the lowest port's as ports come and go.
  if (!pin_mac.empty()) {
    NG_RETURN_IF_ERROR(
        netlink::ChangeLink(node, link.index, {.mac = pin_mac}, "could not set bridge's mac"));
  }
  return OkStatus();
}

Status EnableForwarding(net::Family family) {
  return sys::EnsureSysctl(
      family == net::Family::kV4 ? "net/ipv4/ip_forward" : "net/ipv6/conf/all/forwarding", "1");
}

std::string RetiredInterfaceName(const std::string& ifname) {
  return "ngdel" + Sha512Hex(ifname).substr(0, 10);
}

Status RemoveContainerInterface(netlink::Socket& container, const std::string& ifname) {
  const std::string retired = RetiredInterfaceName(ifname);
  NG_ASSIGN_OR_RETURN(auto left, netlink::GetLinkByName(container, retired));
  if (left) NG_RETURN_IF_ERROR(netlink::DeleteLinkByIndex(container, left->index));
  NG_ASSIGN_OR_RETURN(auto link, netlink::GetLinkByName(container, ifname));
  if (!link) return OkStatus();
  if (!sys::DetachedWorkAllowed() || link->kind != "veth") {
    return netlink::DeleteLinkByIndex(container, link->index);
  }
  NG_RETURN_IF_ERROR(netlink::RetireLink(container, *link, retired));
  // The child deletes it through this socket (this process does not use it again): the
  // container's namespace needs no entering, and a namespace removed meanwhile took the pair
  // with it (already gone is success).
  const int index = link->index;
  const bool detached = sys::SpawnDetached(
      [&container, index] { (void)netlink::DeleteLinkByIndex(container, index); },
      {nl_socket_get_fd(container.get())});
  return detached ? OkStatus() : netlink::DeleteLinkByIndex(container, index);
}

}  // namespace nodegate::bridge
