#pragma once
// What an ADD makes, built as data from the config and the IPAM result before (or without) any
// kernel call; plugin.cc applies it. Each piece is the reference's behaviour, named after the
// reference function it replaces:
//
//   PortVlans        setupVeth's VLAN calls: the port's VLANs in the bridge's table
//   BuildL3Plan      calcGateways and ConfigureIface: the result's IPs (on interface 2), the
//                    default routes isDefaultGateway adds, the bridge's gateway addresses and
//                    the container's sysctls
//   BuildMasqPlan    SetupIPMasqForNetworks: chain, comment and addresses of the masquerade rules

#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/types.h"
#include "lib/net/ip.h"
#include "lib/netlink/bridge_port.h"
#include "plugins/bridge/config.h"

namespace nodegate::bridge {

// Index of the container interface in the result: [bridge, host veth, container].
inline constexpr int kContainerInterfaceIndex = 2;

std::vector<netlink::BridgeVlan> PortVlans(const BridgeConfig& config);

struct Sysctl {
  std::string name;  // under /proc/sys, '/'-separated
  std::string value;
  bool operator==(const Sysctl&) const = default;
};

struct L3Plan {
  // ips (interface 2, gateways filled in for isGateway), routes (IPAM's, then a default
  // route per family for isDefaultGateway), dns (the config's when set, else IPAM's).
  cni::CniResult result;
  // The gateway addresses of the bridge (or its VLAN interface), with the container's prefix
  // length, per family in the result's order.
  std::vector<net::IpPrefix> gateways_v4, gateways_v6;
  // Written in the container before its addresses, in this order.
  std::vector<Sysctl> container_sysctls;
  // IPv6 is on for lo and the interface, and keep_addr_on_down set, before the first IPv6
  // address goes on (ConfigureIface).
  bool enable_ipv6 = false;
  // The default gateway of each family: routes without a gateway of their own use it.
  std::optional<net::IpAddress> default_gw_v4, default_gw_v6;
};

// Errors (code 7): no IP in the IPAM result ("IPAM plugin returned missing IP config").
Result<L3Plan> BuildL3Plan(const BridgeConfig& config, const cni::CniResult& ipam,
                           const std::string& ifname);

struct MasqPlan {
  std::string chain;                     // CNI-<24 hex of sha512(network + container ID)>
  std::string comment;                   // name: "<network>" id: "<container ID>"
  std::vector<net::IpPrefix> addresses;  // the container's, with their prefix lengths
};
MasqPlan BuildMasqPlan(const std::string& network, const std::string& container_id,
                       const std::vector<net::IpPrefix>& addresses);
// The iptables chain of (network, container) (utils.FormatChainName).
std::string MasqChainName(const std::string& network, const std::string& container_id);
std::string MasqComment(const std::string& network, const std::string& container_id);

// The host veth's name: "veth" and 8 random hex digits (ip.RandomVethName).
std::string RandomVethName();

}  // namespace nodegate::bridge
