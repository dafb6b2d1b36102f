#pragma once
// Conntrack entries through netlink (libnl-nf), in the calling thread's network namespace.
// Used by portmap to drop stale UDP entries for a host port whose target changed: without
// that, a client that keeps sending keeps hitting the old (gone) container.

#include <cstdint>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::conntrack {

// What one DeleteByDestinationPort did.
struct Flushed {
  int deleted = 0;  // entries deleted
  int dumps = 0;    // dump requests sent (each one walks the kernel's whole conntrack hash)
};

// Deletes entries of `family` (AF_INET or AF_INET6) with L4 protocol `protocol` (IPPROTO_UDP)
// whose original-direction destination port is in `ports`, whatever the addresses. First asks
// how many entries the namespace holds (ctnetlink's statistics, no walk): none, and nothing is
// dumped. Errors: code 100 when netlink fails.
Result<Flushed> DeleteByDestinationPort(int family, uint8_t protocol,
                                        const std::vector<uint16_t>& ports);

}  // namespace nodegate::conntrack
