#pragma once
// Interface addresses (RTM_NEWADDR/DELADDR/GETADDR) in the socket's namespace, as iproute2's
// `ip addr` and the reference plugins (vishvananda/netlink AddrAdd) write them: an IPv4 address
// shorter than /31 gets its broadcast address, scope universe.
//
//   NG_RETURN_IF_ERROR(AddAddress(sock, index, *net::IpPrefix::Parse("10.88.0.2/16")));
//   NG_ASSIGN_OR_RETURN(std::vector<Address> v6, ListAddresses(sock, index, net::Family::kV6));

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netlink/socket.h"

namespace nodegate::netlink {

struct Address {
  net::IpPrefix prefix;  // the address with its prefix length (host bits kept)
  uint32_t flags = 0;    // IFA_F_* (IFA_FLAGS when sent, else ifa_flags)
  uint8_t scope = 0;     // RT_SCOPE_*
};

// Adds `prefix` to link `index`. Returns false (nothing added) when the link already has exactly
// that address (EEXIST).
Result<bool> AddAddress(Socket& sock, int index, const net::IpPrefix& prefix);
// Removes it; an address that is not there is no error.
Status DeleteAddress(Socket& sock, int index, const net::IpPrefix& prefix);
// The link's addresses of `family` (every family when nullopt), in the kernel's order.
Result<std::vector<Address>> ListAddresses(Socket& sock, int index,
                                           std::optional<net::Family> family);

}  // namespace nodegate::netlink
