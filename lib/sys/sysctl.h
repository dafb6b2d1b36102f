#pragma once
// Kernel parameters under /proc/sys, in the network namespace of the calling thread at the
// time of the call (the kernel binds /proc/sys/net to the opener's namespace). Names use '/'
// between components ("net/ipv6/conf/eth0.100/accept_ra"), so interface names with dots work.
//
//   NG_RETURN_IF_ERROR(sys::WriteSysctl("net/ipv4/conf/eth0/arp_notify", "1"));
//   NG_ASSIGN_OR_RETURN(std::string forward, sys::ReadSysctl("net/ipv4/ip_forward"));

#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::sys {

// The value with surrounding whitespace trimmed. Errors: code 5 naming the parameter.
Result<std::string> ReadSysctl(std::string_view name);
// Writes `value`. Errors: code 5 naming the parameter and the errno.
Status WriteSysctl(std::string_view name, std::string_view value);
// Writes `value` unless the parameter holds it already (a write of the same value to some
// parameters, such as forwarding, still takes the kernel's locks).
Status EnsureSysctl(std::string_view name, std::string_view value);

}  // namespace nodegate::sys
