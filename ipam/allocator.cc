#include "ipam/allocator.h"

#include <algorithm>

#include "lib/base/scope_guard.h"

namespace nodegate::ipam {

RangeIterator::RangeIterator(const RangeSet& set, std::optional<net::IpAddress> last_reserved)
    : set_(set) {
  if (last_reserved) {
    for (size_t i = 0; i < set_.ranges.size(); ++i) {
      if (set_.ranges[i].Contains(*last_reserved)) {
        // The first Next() advances past the last reserved address.
        range_index_ = start_range_ = i;
        current_ = *last_reserved;
        return;
      }
    }
  }
  // Not usable (absent, or the ranges changed since): lose round robin once, as the reference.
  start_ip_ = set_.ranges.front().range_start;
}

std::optional<RangeIterator::Candidate> RangeIterator::Next() {
  while (!done_) {
    const Range* range = &set_.ranges[range_index_];
    if (!current_) {
      current_ = range->range_start;
      start_ip_ = current_;
      start_range_ = range_index_;
    } else {
      if (*current_ == range->range_end) {
        range_index_ = (range_index_ + 1) % set_.ranges.size();
        range = &set_.ranges[range_index_];
        current_ = range->range_start;
      } else {
        current_ = current_->Next();
      }
      if (!start_ip_) {
        // Starting after the last reserved address: the first position is the loop's end.
        // (The reference keeps the old range index here and never ends when the last
        // address was a range's end and the set is full; we record where we really are.)
        start_ip_ = current_;
        start_range_ = range_index_;
      } else if (range_index_ == start_range_ && *current_ == *start_ip_) {
        done_ = true;
        break;
      }
    }
    if (*current_ == range->gateway) {
      continue;
    }
    return Candidate{*current_, range_index_};
  }
  return std::nullopt;
}

namespace {

// Takes the first requested address the set contains off the list: each is allocated once.
std::optional<net::IpAddress> TakeRequestedIn(const RangeSet& set,
                                              std::vector<net::IpAddress>& requested) {
  for (auto it = requested.begin(); it != requested.end(); ++it) {
    if (set.Contains(*it)) {
      net::IpAddress want = *it;
      requested.erase(it);
      return want;
    }
  }
  return std::nullopt;
}

Error DuplicateAllocation(const net::IpAddress& ip, const Owner& owner) {
  return Error(kErrAddressInUse, ip.ToString() + " has been allocated to " + owner.container_id +
                                     ", duplicate allocation is not allowed");
}

Result<Allocation> ReserveRequested(const RangeSet& set, size_t idx, const net::IpAddress& want,
                                    const Owner& owner, Store& store) {
  const Range* range = set.RangeFor(want);
  if (want == range->gateway) {
    return Error(kErrInvalidConfig, "requested ip " + want.ToString() + " is subnet's gateway");
  }
  NG_ASSIGN_OR_RETURN(bool reserved, store.Reserve(owner, want, static_cast<int>(idx)));
  if (!reserved) {
    return Error(kErrAddressInUse, "requested IP address " + want.ToString() +
                                       " is not available in range set " + set.ToString());
  }
  return Allocation{want, range, false};
}

// Walks the set round robin from the last address reserved in it to the first free one.
Result<Allocation> ReserveNextFree(const RangeSet& set, size_t idx, const Owner& owner,
                                   Store& store) {
  NG_ASSIGN_OR_RETURN(std::optional<net::IpAddress> last,
                      store.LastReserved(static_cast<int>(idx)));
  RangeIterator iter(set, last);
  while (auto candidate = iter.Next()) {
    NG_ASSIGN_OR_RETURN(bool reserved, store.Reserve(owner, candidate->ip, static_cast<int>(idx)));
    if (reserved) {
      return Allocation{candidate->ip, &set.ranges[candidate->range_index], false};
    }
  }
  return Error(kErrAddressExhausted, "no IP addresses available in range set: " + set.ToString());
}

// The allocation of range set idx: the owner's address there (kept), else the requested one,
// else the next free one. Errors come without the range set's context.
Result<Allocation> AllocateInSet(const RangeSet& set, size_t idx,
                                 const std::optional<net::IpAddress>& want,
                                 const std::vector<net::IpAddress>& held,
                                 const std::vector<net::IpAddress>& legacy_held, const Owner& owner,
                                 Store& store) {
  auto mine = std::find_if(held.begin(), held.end(),
                           [&](const net::IpAddress& ip) { return set.Contains(ip); });
  if (mine != held.end()) {
    if (want && *want != *mine) {
      return DuplicateAllocation(*mine, owner);
    }
    return Allocation{*mine, set.RangeFor(*mine), true};
  }
  if (want) {
    return ReserveRequested(set, idx, *want, owner, store);
  }
  for (const auto& ip : legacy_held) {
    if (set.Contains(ip)) {
      return DuplicateAllocation(ip, owner);
    }
  }
  return ReserveNextFree(set, idx, owner, store);
}

}  // namespace

Result<std::vector<Allocation>> AllocateAll(const IpamConfig& cfg, const Owner& owner,
                                            Store& store) {
  NG_ASSIGN_OR_RETURN(std::vector<net::IpAddress> held, store.FindByOwner(owner));
  NG_ASSIGN_OR_RETURN(std::vector<net::IpAddress> legacy_held,
                      store.FindByOwner(Owner{owner.container_id, ""}));
  std::vector<net::IpAddress> requested = cfg.requested_ips;
  std::vector<Allocation> out;
  std::vector<net::IpAddress> created;
  // Undo only what this call reserved. (The reference releases every reservation of the
  // owner, which would also drop those of an earlier, successful ADD.)
  ScopeGuard rollback([&] {
    for (const auto& ip : created) {
      (void)store.Release(owner, ip);
    }
  });

  for (size_t idx = 0; idx < cfg.range_sets.size(); ++idx) {
    const RangeSet& set = cfg.range_sets[idx];
    const std::optional<net::IpAddress> want = TakeRequestedIn(set, requested);
    auto got = AllocateInSet(set, idx, want, held, legacy_held, owner, store);
    if (!got.ok()) {
      return got.error().WithContext("failed to allocate for range " + std::to_string(idx));
    }
    if (!got->reused) {
      created.push_back(got->ip);
    }
    out.push_back(*got);
  }

  if (!requested.empty()) {
    std::string msg = "failed to allocate all requested IPs:";
    for (const auto& ip : requested) {
      msg += " " + ip.ToString();
    }
    return Error(kErrInvalidConfig, msg);
  }
  rollback.Dismiss();
  return out;
}

Result<std::optional<size_t>> FindFullRangeSet(const IpamConfig& cfg, Store& store) {
  for (size_t idx = 0; idx < cfg.range_sets.size(); ++idx) {
    const RangeSet& set = cfg.range_sets[idx];
    NG_ASSIGN_OR_RETURN(std::optional<net::IpAddress> last,
                        store.LastReserved(static_cast<int>(idx)));
    RangeIterator iter(set, last);
    bool free_found = false;
    // Stops at the first free address, so the walk is bounded by the number of reservations.
    while (auto candidate = iter.Next()) {
      NG_ASSIGN_OR_RETURN(bool taken, store.IsReserved(candidate->ip));
      if (!taken) {
        free_found = true;
        break;
      }
    }
    if (!free_found) {
      return std::optional<size_t>(idx);
    }
  }
  return std::optional<size_t>();
}

}  // namespace nodegate::ipam
