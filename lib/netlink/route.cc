#include "lib/netlink/route.h"

#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <string>

namespace nodegate::netlink {
namespace {

int RouteAf(net::Family family) { return family == net::Family::kV4 ? AF_INET : AF_INET6; }

}  // namespace

Status AddRoute(Socket& sock, const RouteSpec& route) {
  std::string what = "add route " + route.dst.ToString();
  if (route.gateway) what += " via " + route.gateway->ToString();
  what += " dev " + std::to_string(route.ifindex);
  MsgPtr msg = NewMessage(RTM_NEWROUTE, NLM_F_CREATE);
  rtmsg rtm{};
  rtm.rtm_family = static_cast<uint8_t>(RouteAf(route.dst.family()));
  rtm.rtm_dst_len = static_cast<uint8_t>(route.dst.length());
  const uint32_t table = route.table.value_or(RT_TABLE_MAIN);
  rtm.rtm_table = static_cast<uint8_t>(table < 256 ? table : uint32_t{RT_TABLE_UNSPEC});
  rtm.rtm_protocol = RTPROT_BOOT;
  rtm.rtm_scope = route.scope.value_or(RT_SCOPE_UNIVERSE);
  rtm.rtm_type = RTN_UNICAST;
  if (!msg || nlmsg_append(msg.get(), &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, what + ": out of memory");
  }
  nl_msg* m = msg.get();
  const int len = route.dst.address().byte_length();
  const auto dst = route.dst.Network().bytes();
  int r = nla_put(m, RTA_DST, len, dst.data());
  if (route.gateway) {
    if (route.gateway->family() != route.dst.family()) {
      return Error(kErrInvalidConfig, what + ": gateway of another address family");
    }
    r |= nla_put(m, RTA_GATEWAY, len, route.gateway->bytes().data());
  }
  r |= nla_put_u32(m, RTA_OIF, static_cast<uint32_t>(route.ifindex));
  if (route.priority) r |= nla_put_u32(m, RTA_PRIORITY, *route.priority);
  if (table >= 256) r |= nla_put_u32(m, RTA_TABLE, table);
  if (route.mtu || route.advmss) {
    nlattr* metrics = nla_nest_start(m, RTA_METRICS);
    r |= metrics == nullptr ? -1 : 0;
    if (route.mtu) r |= nla_put_u32(m, RTAX_MTU, *route.mtu);
    if (route.advmss) r |= nla_put_u32(m, RTAX_ADVMSS, *route.advmss);
    if (metrics != nullptr) nla_nest_end(m, metrics);
  }
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  return sock.Request(m, what);
}

Result<std::vector<RouteEntry>> ListRoutes(Socket& sock, net::Family family) {
  const std::string what = "list routes";
  MsgPtr msg = NewMessage(RTM_GETROUTE, NLM_F_DUMP);
  rtmsg rtm{};
  rtm.rtm_family = static_cast<uint8_t>(RouteAf(family));
  if (!msg || nlmsg_append(msg.get(), &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, what + ": out of memory");
  }
  std::vector<RouteEntry> out;
  const int len = family == net::Family::kV4 ? 4 : 16;
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(), what, [&](const nlmsghdr* hdr) {
    if (hdr->nlmsg_type != RTM_NEWROUTE) return;
    auto* h = const_cast<nlmsghdr*>(hdr);
    const auto* rt = static_cast<const rtmsg*>(nlmsg_data(h));
    if (rt->rtm_type != RTN_UNICAST) return;
    nlattr* tb[RTA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(rtmsg), tb, RTA_MAX, nullptr) < 0) return;
    RouteEntry e;
    e.table = tb[RTA_TABLE] != nullptr ? nla_get_u32(tb[RTA_TABLE]) : rt->rtm_table;
    if (e.table != RT_TABLE_MAIN) return;
    net::IpAddress dst =
        family == net::Family::kV4 ? net::IpAddress::V4(0) : *net::IpAddress::Parse("::");
    if (tb[RTA_DST] != nullptr && nla_len(tb[RTA_DST]) == len) {
      dst = net::IpAddress::FromBytes(family, static_cast<const uint8_t*>(nla_data(tb[RTA_DST])));
    }
    e.dst = net::IpPrefix(dst, rt->rtm_dst_len);
    if (tb[RTA_GATEWAY] != nullptr && nla_len(tb[RTA_GATEWAY]) == len) {
      e.gateway =
          net::IpAddress::FromBytes(family, static_cast<const uint8_t*>(nla_data(tb[RTA_GATEWAY])));
    }
    if (tb[RTA_OIF] != nullptr) e.ifindex = static_cast<int>(nla_get_u32(tb[RTA_OIF]));
    out.push_back(e);
  }));
  return out;
}

}  // namespace nodegate::netlink
