#include "plugins/bridge/plan.h"

#include <fcntl.h>
#include <sys/random.h>

#include "lib/base/hash.h"
#include "lib/base/hex.h"

namespace nodegate::bridge {
namespace {

net::IpPrefix DefaultRoute(net::Family family) {
  return family == net::Family::kV4 ? net::IpPrefix(net::IpAddress::V4(0), 0)
                                    : net::IpPrefix(*net::IpAddress::Parse("::"), 0);
}

}  // namespace

std::vector<netlink::BridgeVlan> PortVlans(const BridgeConfig& config) {
  std::vector<netlink::BridgeVlan> vlans;
  if (config.vlan != 0) {
    vlans.push_back({.vid = config.vlan, .pvid = true, .untagged = true});
  }
  for (uint16_t vid : config.trunk) vlans.push_back({.vid = vid});
  // A trunk without an access VLAN keeps VLAN 1 as its native (untagged) VLAN.
  if (config.vlan == 0 && !config.trunk.empty()) {
    vlans.push_back({.vid = 1, .pvid = true, .untagged = true});
  }
  return vlans;
}

Result<L3Plan> BuildL3Plan(const BridgeConfig& config, const cni::CniResult& ipam,
                           const std::string& ifname) {
  if (ipam.ips.empty()) {
    return Error(kErrInvalidConfig, "IPAM plugin returned missing IP config");
  }
  L3Plan plan;
  plan.result.ips = ipam.ips;
  plan.result.routes = ipam.routes;
  plan.result.dns = config.dns_given ? config.dns : ipam.dns;
  bool default_found_v4 = false, default_found_v6 = false;
  for (cni::IpConfig& ip : plan.result.ips) {
    const net::Family family = ip.address.family();
    ip.interface = kContainerInterfaceIndex;
    if (!ip.gateway && config.is_gateway) ip.gateway = ip.address.Network().Next();
    bool& found = family == net::Family::kV4 ? default_found_v4 : default_found_v6;
    if (config.is_default_gateway && !found) {
      // A default route of IPAM's counts whether or not it names a gateway: one without goes
      // through this gateway anyway (the reference adds a second one, which the kernel then
      // refuses as a duplicate).
      for (const cni::Route& route : plan.result.routes) {
        if (route.dst.family() == family && route.dst.length() == 0 &&
            route.dst.address().IsZero()) {
          found = true;
          break;
        }
      }
      if (!found) {
        plan.result.routes.push_back({.dst = DefaultRoute(family), .gw = ip.gateway});
        found = true;
      }
    }
    if (config.is_gateway && ip.gateway) {
      (family == net::Family::kV4 ? plan.gateways_v4 : plan.gateways_v6)
          .push_back(net::IpPrefix(*ip.gateway, ip.address.length()));
    }
    // ConfigureIface: the first gateway of each family is the default for routes without one.
    auto& gw = family == net::Family::kV4 ? plan.default_gw_v4 : plan.default_gw_v6;
    if (!gw && ip.gateway) gw = ip.gateway;
    if (family == net::Family::kV6) plan.enable_ipv6 = true;
  }
  const std::string v6 = "net/ipv6/conf/" + ifname + "/";
  if (config.enable_dad) {
    plan.container_sysctls.push_back({v6 + "enhanced_dad", "1"});
    plan.container_sysctls.push_back({v6 + "accept_dad", "1"});
  } else {
    plan.container_sysctls.push_back({v6 + "accept_dad", "0"});
  }
  plan.container_sysctls.push_back({"net/ipv4/conf/" + ifname + "/arp_notify", "1"});
  return plan;
}

std::string MasqChainName(const std::string& network, const std::string& container_id) {
  return HashedName("CNI-", network, container_id, 28);
}

std::string MasqComment(const std::string& network, const std::string& container_id) {
  std::string comment = "name: \"" + network + "\" id: \"" + container_id + "\"";
  // The kernel keeps 255 bytes of an xt comment.
  if (comment.size() > 255) {
    comment.resize(252);
    comment += "...";
  }
  return comment;
}

MasqPlan BuildMasqPlan(const std::string& network, const std::string& container_id,
                       const std::vector<net::IpPrefix>& addresses) {
  return MasqPlan{.chain = MasqChainName(network, container_id),
                  .comment = MasqComment(network, container_id),
                  .addresses = addresses};
}

std::string RandomVethName() {
  uint8_t entropy[4] = {};
  if (::getrandom(entropy, sizeof(entropy), 0) != sizeof(entropy)) {
    // Without entropy, the time and the process make a name that is tried like any other.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint32_t mix = static_cast<uint32_t>(ts.tv_nsec) ^ static_cast<uint32_t>(::getpid());
    for (int i = 0; i < 4; ++i) entropy[i] = static_cast<uint8_t>(mix >> (8 * i));
  }
  return "veth" + HexEncode(entropy);
}

}  // namespace nodegate::bridge
