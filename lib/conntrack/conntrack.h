#pragma once
// Conntrack entries through netlink (libnl-nf), in the calling thread's network namespace.
// Used by portmap to drop stale UDP entries for a host port whose target changed: without
// that, a client that keeps sending keeps hitting the old (gone) container.

#include <cstdint>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::conntrack {

// Deletes entries of `family` (AF_INET or AF_INET6) with L4 protocol `protocol` (IPPROTO_UDP)
// whose original-direction destination port is in `ports`, whatever the addresses. Returns how
// many were deleted. Errors: code 100 when netlink fails.
Result<int> DeleteByDestinationPort(int family, uint8_t protocol,
                                    const std::vector<uint16_t>& ports);

}  // namespace nodegate::conntrack
