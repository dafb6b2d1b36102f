#include "plugins/bridge/check.h"

#include "lib/netlink/address.h"
#include "lib/netlink/link.h"
#include "lib/netlink/route.h"
#include "lib/sys/netns.h"
#include "plugins/bridge/masq.h"
#include "plugins/bridge/plan.h"
#include "plugins/bridge/spoofcheck.h"

namespace nodegate::bridge {
namespace {

Error Failed(const std::string& msg) { return Error(kErrCheckFailed, msg); }

// validateInterface: named, present, in a sandbox or not as expected.
Result<netlink::LinkInfo> LookUp(netlink::Socket& sock, const cni::Interface& intf,
                                 bool in_sandbox) {
  if (intf.name.empty()) return Failed("Interface name missing ");
  NG_ASSIGN_OR_RETURN(auto link, netlink::GetLinkByName(sock, intf.name));
  if (!link) return Failed("Interface name " + intf.name + " not found");
  if (in_sandbox && intf.sandbox.empty()) {
    return Failed("Interface " + intf.name + " is expected to be in a sandbox");
  }
  if (!in_sandbox && !intf.sandbox.empty()) {
    return Failed("Interface " + intf.name + " should not be in sandbox");
  }
  return *link;
}

std::string RouteText(const cni::Route& r) {
  return "{Dst:" + r.dst.Masked().ToString() + " GW:" + (r.gw ? r.gw->ToString() : "<nil>") + "}";
}

// ValidateExpectedInterfaceIPs and ValidateExpectedRoute, in the container.
Status CheckContainerL3(netlink::Socket& sock, const std::string& ifname,
                        const cni::CniResult& prev) {
  std::optional<std::vector<netlink::RouteEntry>> v4, v6;
  auto routes = [&](net::Family f) -> Result<const std::vector<netlink::RouteEntry>*> {
    auto& slot = f == net::Family::kV4 ? v4 : v6;
    if (!slot) {
      NG_ASSIGN_OR_RETURN(slot, netlink::ListRoutes(sock, f));
    }
    return &*slot;
  };
  for (const cni::IpConfig& ip : prev.ips) {
    NG_ASSIGN_OR_RETURN(auto link, netlink::GetLinkByName(sock, ifname));
    if (!link) return Failed("Cannot find container link " + ifname);
    NG_ASSIGN_OR_RETURN(auto addresses, netlink::ListAddresses(sock, link->index, std::nullopt));
    bool match = false;
    for (const auto& a : addresses) match = match || a.prefix == ip.address;
    if (!match) {
      return Failed("Failed to match addr " + ip.address.ToString() + " on interface " + ifname);
    }
    NG_ASSIGN_OR_RETURN(const auto* table, routes(ip.address.family()));
    bool gateway = false;
    for (const auto& r : *table) gateway = gateway || r.dst == ip.address.Masked();
    if (!gateway) {
      return Failed("Failed to find Gateway " + (ip.gateway ? ip.gateway->ToString() : "<nil>") +
                    " for interface " + ifname);
    }
  }
  for (const cni::Route& route : prev.routes) {
    NG_ASSIGN_OR_RETURN(const auto* table, routes(route.dst.family()));
    const bool is_default = route.dst.length() == 0;
    bool found = false;
    for (const auto& r : *table) {
      if (r.dst != route.dst.Masked()) continue;
      // The reference filters default routes by destination only.
      if (!is_default && route.gw && r.gateway != route.gw) continue;
      found = true;
    }
    if (!found) return Failed("Expected Route " + RouteText(route) + " not found in routing table");
  }
  return OkStatus();
}

}  // namespace

Status CheckAttachment(const cni::CmdArgs& args, const BridgeConfig& config,
                       const cni::CniResult& prev) {
  cni::Interface bridge_intf, container_intf;
  for (const cni::Interface& intf : prev.interfaces) {
    if (intf.name == config.bridge) {
      bridge_intf = intf;
    } else if (intf.name == args.ifname && intf.sandbox == args.netns) {
      container_intf = intf;
    }
  }
  NG_ASSIGN_OR_RETURN(netlink::Socket node, netlink::Socket::Open());
  NG_ASSIGN_OR_RETURN(const netlink::LinkInfo bridge, LookUp(node, bridge_intf, false));
  if (bridge.kind != "bridge") {
    return Failed("Interface " + bridge_intf.name + " does not have link type of bridge");
  }
  if (!bridge_intf.mac.empty() && bridge_intf.mac != bridge.mac) {
    return Failed("Bridge interface " + bridge_intf.name +
                  " Mac doesn't match: " + bridge_intf.mac);
  }
  if (bridge.promisc != config.promisc) {
    return Failed("Bridge interface " + bridge_intf.name + " configured Promisc Mode " +
                  (config.promisc ? "true" : "false") +
                  " doesn't match current state: " + (bridge.promisc ? "true" : "false") + " ");
  }
  if (args.netns != container_intf.sandbox) {
    return Failed("Sandbox in prevResult " + container_intf.sandbox +
                  " doesn't match configured netns: " + args.netns);
  }
  netlink::LinkInfo container;
  std::optional<netlink::Socket> container_sock;
  {
    NG_ASSIGN_OR_RETURN(auto in_container, sys::NetnsScope::Enter(args.netns));
    NG_ASSIGN_OR_RETURN(container_sock, netlink::Socket::Open());
  }
  NG_ASSIGN_OR_RETURN(container, LookUp(*container_sock, container_intf, true));
  if (container.kind != "veth") {
    return Failed("Error: Container interface " + container.name + " not of type veth");
  }
  if (container.link <= 0) {
    return Failed("Unable to obtain veth peer index for veth " + container.name);
  }
  if (!container_intf.mac.empty() && container_intf.mac != container.mac) {
    return Failed("Interface " + container_intf.name + " Mac " + container_intf.mac +
                  " doesn't match container Mac: " + container.mac);
  }
  std::optional<netlink::LinkInfo> host;
  for (const cni::Interface& intf : prev.interfaces) {
    if (intf.name == bridge_intf.name || intf.name == container_intf.name) continue;
    NG_ASSIGN_OR_RETURN(const netlink::LinkInfo link, LookUp(node, intf, false));
    if (link.kind != "veth") continue;  // not made by a CNI bridge
    if (link.index != container.link || link.link != container.index ||
        link.master != bridge.index) {
      continue;
    }
    if (!intf.mac.empty() && intf.mac != link.mac) {
      return Failed("Interface " + intf.name + " Mac doesn't match: " + intf.mac + " not found");
    }
    host = link;
    break;
  }
  if (!host) return Failed("CNI veth created for bridge " + config.bridge + " was not found");
  NG_RETURN_IF_ERROR(CheckContainerL3(*container_sock, args.ifname, prev));
  if (config.layer3() && config.ip_masq) {
    std::vector<net::IpPrefix> addresses;
    for (const cni::IpConfig& ip : prev.ips) addresses.push_back(ip.address);
    NG_RETURN_IF_ERROR(CheckMasq(
        ChooseMasqBackend(config.masq_backend),
        {.network = args.conf.name, .ifname = args.ifname, .container_id = args.container_id},
        BuildMasqPlan(args.conf.name, args.container_id, addresses)));
  }
  if (config.mac_spoof_check) {
    NG_RETURN_IF_ERROR(CheckSpoofCheck({.host_veth = host->name,
                                        .container_mac = container.mac,
                                        .container_id = args.container_id,
                                        .ifname = args.ifname}));
  }
  return OkStatus();
}

}  // namespace nodegate::bridge
