#pragma once
// Routes (RTM_NEWROUTE/GETROUTE) in the socket's namespace, written as the reference plugins
// write them (vishvananda/netlink RouteAddEcmp): protocol boot, NLM_F_CREATE without NLM_F_EXCL
// (an IPv6 route to the same destination through another gateway joins it as a multipath
// next hop), the main table unless told.
//
//   NG_RETURN_IF_ERROR(AddRoute(sock, {.dst = *net::IpPrefix::Parse("0.0.0.0/0"),
//                                      .gateway = gw, .ifindex = eth0.index}));

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netlink/socket.h"

namespace nodegate::netlink {

struct RouteSpec {
  net::IpPrefix dst;
  std::optional<net::IpAddress> gateway;
  int ifindex = 0;
  std::optional<uint32_t> priority;  // RTA_PRIORITY (the metric)
  std::optional<uint32_t> table;     // RT_TABLE_MAIN when not given
  std::optional<uint8_t> scope;      // RT_SCOPE_UNIVERSE when not given
  std::optional<uint32_t> mtu;       // RTAX_MTU
  std::optional<uint32_t> advmss;    // RTAX_ADVMSS
};
Status AddRoute(Socket& sock, const RouteSpec& route);

struct RouteEntry {
  net::IpPrefix dst;  // 0.0.0.0/0 or ::/0 for a default route
  std::optional<net::IpAddress> gateway;
  int ifindex = 0;
  uint32_t table = 0;
};
// Every unicast route of `family` in the main table (one dump).
Result<std::vector<RouteEntry>> ListRoutes(Socket& sock, net::Family family);

}  // namespace nodegate::netlink
