#pragma once
// route_localnet for IPv4 localhost access: a packet to 127.0.0.1:hostPort that is DNATed to
// the container leaves through the link towards the container, and the kernel drops
// 127.0.0.0/8 sources there unless route_localnet is set on that link (the reference sets it
// the same way and never reverts it). Works in the calling thread's network namespace.

#include <string>

#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::portmap {

// The name of the link the kernel routes `destination` through (RTM_GETROUTE).
Result<std::string> RouteOutputLink(const net::IpAddress& destination);

// Sets net.ipv4.conf.<link of container_ip>.route_localnet = 1.
Status EnableRouteLocalnet(const net::IpAddress& container_ip);

}  // namespace nodegate::portmap
