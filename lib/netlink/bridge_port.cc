#include "lib/netlink/bridge_port.h"

#include <linux/if_bridge.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "lib/netlink/link.h"

namespace nodegate::netlink {
namespace {

Result<MsgPtr> BridgeMessage(int type, int flags, int index, const std::string& what) {
  return NewLinkMessage(type, flags, AF_BRIDGE, index, what);
}

// IFLA_AF_SPEC {IFLA_BRIDGE_FLAGS = master, IFLA_BRIDGE_VLAN_INFO...}: the bridge's VLAN table
// of the port (`bridge vlan add ... master`).
Status PutVlanSpec(nl_msg* msg, const std::vector<bridge_vlan_info>& infos,
                   const std::string& what) {
  nlattr* spec = nla_nest_start(msg, IFLA_AF_SPEC);
  int r = spec == nullptr ? -1 : nla_put_u16(msg, IFLA_BRIDGE_FLAGS, BRIDGE_FLAGS_MASTER);
  for (const bridge_vlan_info& info : infos) {
    r |= nla_put(msg, IFLA_BRIDGE_VLAN_INFO, sizeof(info), &info);
  }
  if (spec != nullptr) nla_nest_end(msg, spec);
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  return OkStatus();
}

}  // namespace

Status SetBridgePortFlags(Socket& sock, int index, const BridgePortFlags& flags) {
  const std::string what = "set bridge port flags of link " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, BridgeMessage(RTM_SETLINK, 0, index, what));
  nlattr* protinfo = nla_nest_start(msg.get(), IFLA_PROTINFO | NLA_F_NESTED);
  int r = protinfo == nullptr ? -1 : 0;
  r |= nla_put_u8(msg.get(), IFLA_BRPORT_MODE, flags.hairpin ? 1 : 0);
  r |= nla_put_u8(msg.get(), IFLA_BRPORT_ISOLATED, flags.isolated ? 1 : 0);
  if (protinfo != nullptr) nla_nest_end(msg.get(), protinfo);
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  return sock.Request(msg.get(), what);
}

Status AddBridgeVlans(Socket& sock, int index, const std::vector<BridgeVlan>& vlans) {
  if (vlans.empty()) return OkStatus();
  const std::string what = "add VLANs to bridge port " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, BridgeMessage(RTM_SETLINK, 0, index, what));
  std::vector<bridge_vlan_info> infos;
  for (const BridgeVlan& v : vlans) {
    bridge_vlan_info info{};
    info.vid = v.vid;
    info.flags = static_cast<uint16_t>((v.pvid ? BRIDGE_VLAN_INFO_PVID : 0) |
                                       (v.untagged ? BRIDGE_VLAN_INFO_UNTAGGED : 0));
    infos.push_back(info);
  }
  NG_RETURN_IF_ERROR(PutVlanSpec(msg.get(), infos, what));
  return sock.Request(msg.get(), what);
}

Status DeleteBridgeVlans(Socket& sock, int index, const std::vector<uint16_t>& vids) {
  if (vids.empty()) return OkStatus();
  const std::string what = "delete VLANs from bridge port " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, BridgeMessage(RTM_DELLINK, 0, index, what));
  std::vector<bridge_vlan_info> infos;
  for (uint16_t vid : vids) {
    bridge_vlan_info info{};
    info.vid = vid;
    infos.push_back(info);
  }
  NG_RETURN_IF_ERROR(PutVlanSpec(msg.get(), infos, what));
  return sock.Request(msg.get(), what, {ENOENT});
}

Result<std::vector<BridgeVlan>> ListBridgeVlans(Socket& sock, int index) {
  const std::string what = "list VLANs of bridge port " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, BridgeMessage(RTM_GETLINK, NLM_F_DUMP, 0, what));
  if (nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN) < 0) {
    return Error(kErrKernel, what + ": message too large");
  }
  std::vector<BridgeVlan> out;
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(), what, [&](const nlmsghdr* hdr) {
    if (hdr->nlmsg_type != RTM_NEWLINK) return;
    auto* h = const_cast<nlmsghdr*>(hdr);
    const auto* ifi = static_cast<const ifinfomsg*>(nlmsg_data(h));
    if (ifi->ifi_index != index) return;
    nlattr* tb[IFLA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(ifinfomsg), tb, IFLA_MAX, nullptr) < 0 || !tb[IFLA_AF_SPEC]) return;
    nlattr* attr = nullptr;
    int rem = 0;
    nla_for_each_nested(attr, tb[IFLA_AF_SPEC], rem) {
      if (nla_type(attr) != IFLA_BRIDGE_VLAN_INFO ||
          nla_len(attr) < static_cast<int>(sizeof(bridge_vlan_info))) {
        continue;
      }
      const auto* info = static_cast<const bridge_vlan_info*>(nla_data(attr));
      out.push_back({.vid = info->vid,
                     .pvid = (info->flags & BRIDGE_VLAN_INFO_PVID) != 0,
                     .untagged = (info->flags & BRIDGE_VLAN_INFO_UNTAGGED) != 0});
    }
  }));
  return out;
}

}  // namespace nodegate::netlink
