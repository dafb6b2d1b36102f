#include "plugins/bridge/container.h"

#include <linux/if.h>
#include <linux/if_addr.h>

#include <chrono>
#include <thread>

#include "lib/cni/logging.h"
#include "lib/netlink/address.h"
#include "lib/netlink/route.h"
#include "lib/sys/sysctl.h"

namespace nodegate::bridge {
namespace {

// How long DAD may take before an IPv6 address is usable (the reference's dadSettleTimeout),
// and how often it is looked at (its SETTLE_INTERVAL).
constexpr auto kSettleTimeout = std::chrono::seconds(5);
constexpr auto kSettleInterval = std::chrono::milliseconds(50);

// IPv6 on for lo and the interface, and its addresses kept while it is down.
Status EnableIpv6(const std::string& ifname) {
  for (const std::string& link : {std::string("lo"), ifname}) {
    const std::string name = "net/ipv6/conf/" + link + "/disable_ipv6";
    auto value = sys::ReadSysctl(name);
    if (!value.ok()) {
      cni::LogWarn("failed to read sysctl {}: {}", name, value.error().msg);
      continue;
    }
    if (*value == "0") continue;
    if (Status s = sys::WriteSysctl(name, "0"); !s.ok()) {
      return Error(kErrIo, "failed to enable IPv6 for interface \"" + link + "\" (" + name + "=" +
                               *value + "): " + s.error().msg);
    }
  }
  if (Status s = sys::WriteSysctl("net/ipv6/conf/" + ifname + "/keep_addr_on_down", "1"); !s.ok()) {
    return Error(kErrIo, "failed to enable keep_addr_on_down for interface \"" + ifname +
                             "\": " + s.error().msg);
  }
  return OkStatus();
}

// Waits until no IPv6 address of the link is tentative (SettleAddresses).
Status SettleAddresses(netlink::Socket& sock, const netlink::LinkInfo& link) {
  const auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
  for (;;) {
    NG_ASSIGN_OR_RETURN(auto addresses, netlink::ListAddresses(sock, link.index, net::Family::kV6));
    bool tentative = false;
    for (const auto& a : addresses) {
      if (a.flags & IFA_F_DADFAILED) {
        return Error(kErrKernel, "link " + link.name + " has address " +
                                     a.prefix.address().ToString() + " in DADFAILED state");
      }
      tentative = tentative || (a.flags & IFA_F_TENTATIVE) != 0;
    }
    if (!tentative) return OkStatus();
    if (std::chrono::steady_clock::now() > deadline) {
      NG_ASSIGN_OR_RETURN(auto now, netlink::GetLinkByIndex(sock, link.index));
      if (now && now->operstate == IF_OPER_UP) {
        return Error(kErrKernel,
                     "link " + link.name + " still has tentative addresses after 5 seconds");
      }
      return OkStatus();
    }
    std::this_thread::sleep_for(kSettleInterval);
  }
}

}  // namespace

Status ConfigureContainer(netlink::Socket& sock, const netlink::LinkInfo& link,
                          const L3Plan& plan) {
  // Best effort, as the reference (a kernel without IPv6 has none of the IPv6 ones).
  for (const Sysctl& s : plan.container_sysctls) (void)sys::WriteSysctl(s.name, s.value);
  if (plan.enable_ipv6) NG_RETURN_IF_ERROR(EnableIpv6(link.name));
  for (const cni::IpConfig& ip : plan.result.ips) {
    auto added = netlink::AddAddress(sock, link.index, ip.address);
    if (!added.ok()) {
      return added.error().WithContext("failed to add IP addr " + ip.address.ToString() + " to \"" +
                                       link.name + "\"");
    }
  }
  NG_RETURN_IF_ERROR(netlink::ChangeLink(sock, link.index, {.up = true},
                                         "failed to set \"" + link.name + "\" UP"));
  if (plan.default_gw_v6) NG_RETURN_IF_ERROR(SettleAddresses(sock, link));
  for (const cni::Route& route : plan.result.routes) {
    netlink::RouteSpec spec{.dst = route.dst, .gateway = route.gw, .ifindex = link.index};
    if (!spec.gateway) {
      spec.gateway =
          route.dst.family() == net::Family::kV4 ? plan.default_gw_v4 : plan.default_gw_v6;
    }
    if (route.priority) spec.priority = static_cast<uint32_t>(*route.priority);
    if (route.table) spec.table = static_cast<uint32_t>(*route.table);
    if (route.scope) spec.scope = static_cast<uint8_t>(*route.scope);
    if (route.mtu) spec.mtu = static_cast<uint32_t>(*route.mtu);
    if (route.advmss) spec.advmss = static_cast<uint32_t>(*route.advmss);
    if (Status s = netlink::AddRoute(sock, spec); !s.ok()) {
      return s.error().WithContext("failed to add route " + route.dst.ToString());
    }
  }
  return OkStatus();
}

}  // namespace nodegate::bridge
