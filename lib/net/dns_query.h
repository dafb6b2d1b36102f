#pragma once
// DNS queries through glibc's stub resolver (res_nsearch, res_nquery): the nameservers, search
// list, ndots, timeout and attempts of /etc/resolv.conf (and LOCALDOMAIN, RES_OPTIONS), TCP
// when an answer is truncated. It is part of libc itself and reaches no NSS module, so a
// static executable can use it on any host (lib/net/name_lookup.h).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/net/ip.h"

namespace nodegate::net {

enum class DnsOutcome {
  kFound,       // at least one record of the type asked for
  kNoSuchName,  // NXDOMAIN, or no such name under any search domain
  kNoData,      // the name exists without a record of that type
  kTryAgain,    // no answer in time, or SERVFAIL: a later query may succeed
  kFailed,      // refused, malformed or otherwise not to be retried
};

struct DnsAddresses {
  DnsOutcome outcome = DnsOutcome::kFailed;
  std::string canonical_name;  // the owner of the first address record (after any CNAMEs)
  std::vector<IpAddress> addresses;
};

// The A (kV4) or AAAA (kV6) records of `name`, the search list applied as res_search does.
DnsAddresses DnsLookUpAddresses(std::string_view name, Family family);

// The PTR record's name for `address` (in-addr.arpa / ip6.arpa); kFound with the name in
// canonical_name.
DnsAddresses DnsLookUpPointer(const IpAddress& address);

// Reads the A or AAAA records of a whole DNS response (header, questions, answers); for tests
// and for the two functions above. kFailed when it is malformed, kNoData when it has none.
DnsAddresses ReadDnsAddresses(std::span<const uint8_t> response, Family family);
// The first PTR record's name of a whole DNS response.
DnsAddresses ReadDnsPointer(std::span<const uint8_t> response);

// "4.3.2.1.in-addr.arpa" / the nibbles of an IPv6 address under "ip6.arpa".
std::string ReverseDnsName(const IpAddress& address);

}  // namespace nodegate::net
