#pragma once
// Address ranges and range sets of host-local, canonicalised and checked exactly as the
// reference plugin does (plugins/ipam/host-local/backend/allocator/range.go, range_set.go),
// with the reference's error texts.
//
//   RangeSpec spec{.subnet = IpPrefix::Parse("10.88.0.0/16")};
//   NG_ASSIGN_OR_RETURN(Range r, CanonicalizeRange(spec));
//   // r.gateway == 10.88.0.1, r.range_start == 10.88.0.1, r.range_end == 10.88.255.254

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::ipam {

// An invalid-configuration error (CNI code 7): what every ipam parser reports.
Error ConfigError(std::string msg);

// One range as written in the config, before defaults.
struct RangeSpec {
  std::optional<net::IpPrefix> subnet;
  std::optional<net::IpAddress> range_start;
  std::optional<net::IpAddress> range_end;
  std::optional<net::IpAddress> gateway;
};

// A canonical range: every field set, start <= end, both inside `subnet`.
struct Range {
  net::IpPrefix subnet;  // as written (host bits are rejected during canonicalisation)
  net::IpAddress range_start;
  net::IpAddress range_end;
  net::IpAddress gateway;

  net::Family family() const { return subnet.family(); }
  // In the subnet and within [range_start, range_end].
  bool Contains(const net::IpAddress& ip) const;
  // The reference's test: either range contains the other's start or end.
  bool Overlaps(const Range& other) const;
  // "<start>-<end>", the reference's rendering in error messages.
  std::string ToString() const;
};

// A pool of ranges of one family; one address is allocated per range set.
struct RangeSet {
  std::vector<Range> ranges;

  net::Family family() const { return ranges.front().family(); }
  // The range that contains ip, or nullptr.
  const Range* RangeFor(const net::IpAddress& ip) const;
  bool Contains(const net::IpAddress& ip) const { return RangeFor(ip) != nullptr; }
  bool Overlaps(const RangeSet& other) const;
  // "<start>-<end>,<start>-<end>".
  std::string ToString() const;
  // Number of allocatable addresses (gateways inside the ranges excluded), saturating at
  // UINT64_MAX for huge IPv6 ranges.
  uint64_t Capacity() const;
};

// Applies defaults (gateway = network+1, start = network+1, end = broadcast-1 for IPv4 or the
// last address for IPv6) and checks the range. Errors (code 7) carry the reference's text,
// e.g. "Network 10.0.0.0/31 too small to allocate from".
Result<Range> CanonicalizeRange(const RangeSpec& spec);

// Canonicalises every range, then checks family mix and overlaps ("empty range set",
// "mixed address families", "subnets A-B and C-D overlap").
Result<RangeSet> CanonicalizeRangeSet(const std::vector<RangeSpec>& specs);

// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) become IPv4, as Go's To4() does.
net::IpAddress CanonicalIp(const net::IpAddress& ip);

}  // namespace nodegate::ipam
