#pragma once
// The container side of an attachment (ConfigureIface in the reference): sysctls, addresses,
// link up, DAD settled, routes. The calling thread must be in the container's network
// namespace (the sysctls are written through /proc/sys); netlink goes through `sock`, a socket
// opened there.

#include <string>

#include "lib/base/result.h"
#include "lib/netlink/link.h"
#include "lib/netlink/socket.h"
#include "plugins/bridge/plan.h"

namespace nodegate::bridge {

Status ConfigureContainer(netlink::Socket& sock, const netlink::LinkInfo& link, const L3Plan& plan);

}  // namespace nodegate::bridge
