#pragma once
// Address selection, as the reference allocator (backend/allocator/allocator.go):
//
//   RangeIterator: round robin from last_reserved_ip.N + 1 through every range of the set,
//   wrapping, skipping the current range's gateway, and ending where it started (the last
//   reserved address itself is tried last). Without a usable last address it starts at range
//   0's rangeStart.
//
//   AllocateAll: one address per range set, for one owner. A requested address goes to the
//   first range set that contains it; otherwise the iterator's first address that can be
//   reserved. On any failure every address this call reserved is released again, and the
//   error reads "failed to allocate for range N: ..." with the reference's inner text.
//
// Difference from the reference: ADD is idempotent. When the owner (container id and ifname)
// already holds an address in a range set, that address is returned again instead of the
// error "... duplicate allocation is not allowed".

#include <optional>
#include <vector>

#include "ipam/config.h"
#include "ipam/range.h"
#include "ipam/store.h"
#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::ipam {

class RangeIterator {
 public:
  struct Candidate {
    net::IpAddress ip;
    size_t range_index;
  };

  RangeIterator(const RangeSet& set, std::optional<net::IpAddress> last_reserved);

  // The next candidate, or nullopt once every address was offered.
  std::optional<Candidate> Next();

 private:
  const RangeSet& set_;
  size_t range_index_ = 0;
  std::optional<net::IpAddress> current_;
  size_t start_range_ = 0;
  std::optional<net::IpAddress> start_ip_;
  bool done_ = false;
};

struct Allocation {
  net::IpAddress ip;
  const Range* range;  // the range of cfg.range_sets that holds ip
  bool reused;         // already held by the owner (idempotent ADD)
};

// One allocation per range set, in range-set order. Error codes: 101 exhausted, 102 requested
// address taken (or the owner holds another address in that set), 7 requested address is a
// gateway or outside every range set, 5 store I/O.
Result<std::vector<Allocation>> AllocateAll(const IpamConfig& cfg, const Owner& owner,
                                            Store& store);

// The first range set (index) in which no address can be reserved, or nullopt. For STATUS.
Result<std::optional<size_t>> FindFullRangeSet(const IpamConfig& cfg, Store& store);

}  // namespace nodegate::ipam
