#pragma once
// Conntrack entries over raw ctnetlink, in the calling thread's network namespace. Used by
// portmap to drop stale UDP entries for a host port whose target changed: without that, a
// client that keeps sending keeps hitting the old (gone) container.
//
// The flush allocates nothing (fixed buffers on the stack, port sets as bitmaps), so it can
// also run after the process has exited, in the helper lib/netfilter/release.h starts, which
// shares the exited process's memory.

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

// The same flush, run by the helper this process starts when it exits (release.h), before the
// helper waits for nf_tables to be quiet: the caller's time no longer includes the kernel's
// walk of the conntrack hash. Runs in the namespace this thread is in when it exits. Calls for
// the same family and protocol add up. Its outcome is not reported anywhere. Returns false,
// registering nothing, when the process does not allow detached work (sys::AllowDetachedWork)
// or more than four (family, protocol) pairs are asked for: then the caller flushes itself.
bool DeleteByDestinationPortAfterExit(int family, uint8_t protocol,
                                      const std::vector<uint16_t>& ports);

}  // namespace nodegate::conntrack
