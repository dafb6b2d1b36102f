#include "ipam/range.h"

#include <algorithm>
#include <limits>

namespace nodegate::ipam {

Error ConfigError(std::string msg) { return Error(kErrInvalidConfig, std::move(msg)); }

namespace {

// Number of addresses in [a, b] (same family, a <= b), saturating at UINT64_MAX.
uint64_t CountInclusive(const net::IpAddress& a, const net::IpAddress& b) {
  const auto& x = a.bytes();
  const auto& y = b.bytes();
  const int n = a.byte_length();
  // Difference as a big-endian byte string; saturate when it needs more than 64 bits.
  std::array<int, 16> diff{};
  int borrow = 0;
  for (int i = n - 1; i >= 0; --i) {
    int d = static_cast<int>(y[i]) - static_cast<int>(x[i]) - borrow;
    borrow = d < 0 ? 1 : 0;
    diff[i] = d < 0 ? d + 256 : d;
  }
  uint64_t value = 0;
  for (int i = 0; i < n; ++i) {
    if (value > (std::numeric_limits<uint64_t>::max() >> 8)) {
      return std::numeric_limits<uint64_t>::max();
    }
    value = (value << 8) | static_cast<uint64_t>(diff[i]);
  }
  return value == std::numeric_limits<uint64_t>::max() ? value : value + 1;
}

}  // namespace

net::IpAddress CanonicalIp(const net::IpAddress& ip) {
  if (ip.is_v4()) {
    return ip;
  }
  const auto& b = ip.bytes();
  for (int i = 0; i < 10; ++i) {
    if (b[i] != 0) {
      return ip;
    }
  }
  if (b[10] != 0xff || b[11] != 0xff) {
    return ip;
  }
  return net::IpAddress::FromBytes(net::Family::kV4, b.data() + 12);
}

bool Range::Contains(const net::IpAddress& ip) const {
  return ip.family() == family() && subnet.Contains(ip) && range_start <= ip && ip <= range_end;
}

bool Range::Overlaps(const Range& other) const {
  if (family() != other.family()) {
    return false;
  }
  return Contains(other.range_start) || Contains(other.range_end) || other.Contains(range_start) ||
         other.Contains(range_end);
}

std::string Range::ToString() const { return range_start.ToString() + "-" + range_end.ToString(); }

const Range* RangeSet::RangeFor(const net::IpAddress& ip) const {
  for (const auto& r : ranges) {
    if (r.Contains(ip)) {
      return &r;
    }
  }
  return nullptr;
}

bool RangeSet::Overlaps(const RangeSet& other) const {
  for (const auto& a : ranges) {
    for (const auto& b : other.ranges) {
      if (a.Overlaps(b)) {
        return true;
      }
    }
  }
  return false;
}

std::string RangeSet::ToString() const {
  std::string out;
  for (size_t i = 0; i < ranges.size(); ++i) {
    out += (i ? "," : "") + ranges[i].ToString();
  }
  return out;
}

uint64_t RangeSet::Capacity() const {
  uint64_t total = 0;
  for (const auto& r : ranges) {
    uint64_t n = CountInclusive(r.range_start, r.range_end);
    if (r.Contains(r.gateway) && n != std::numeric_limits<uint64_t>::max()) {
      --n;
    }
    total = (std::numeric_limits<uint64_t>::max() - total < n)
                ? std::numeric_limits<uint64_t>::max()
                : total + n;
  }
  return total;
}

Result<Range> CanonicalizeRange(const RangeSpec& spec) {
  if (!spec.subnet) {
    // The reference fails deep inside with a nil subnet; a clear message is kinder.
    return ConfigError("missing subnet");
  }
  Range r;
  r.subnet = net::IpPrefix(CanonicalIp(spec.subnet->address()), spec.subnet->length());
  const int bits = r.subnet.address().bit_length();
  if (spec.subnet->family() != r.subnet.family()) {
    return ConfigError("IPNet IP and Mask version mismatch");
  }
  if (r.subnet.length() > bits - 2) {
    return ConfigError("Network " + r.subnet.ToString() + " too small to allocate from");
  }
  const net::IpAddress network = r.subnet.Network();
  if (network != r.subnet.address()) {
    return ConfigError("Network has host bits set. For a subnet mask of length " +
                       std::to_string(r.subnet.length()) + " the network address is " +
                       network.ToString());
  }
  const std::string cidr = r.subnet.ToString();
  r.gateway = spec.gateway ? CanonicalIp(*spec.gateway) : network.Next();
  if (r.gateway.family() != r.family()) {
    // Not checked by the reference (it would print a gateway of the wrong family).
    return ConfigError("gateway " + r.gateway.ToString() + " is not of the family of network " +
                       cidr);
  }
  if (spec.range_start) {
    r.range_start = CanonicalIp(*spec.range_start);
    if (r.range_start.family() != r.family() || !r.subnet.Contains(r.range_start)) {
      return ConfigError("RangeStart " + r.range_start.ToString() + " not in network " + cidr);
    }
  } else {
    r.range_start = network.Next();
  }
  if (spec.range_end) {
    r.range_end = CanonicalIp(*spec.range_end);
    // As the reference: an end before the start is "not in network".
    if (r.range_end.family() != r.family() || !r.subnet.Contains(r.range_end) ||
        r.range_end < r.range_start) {
      return ConfigError("RangeEnd " + r.range_end.ToString() + " not in network " + cidr);
    }
  } else {
    r.range_end = r.subnet.LastAddress();
    if (r.range_end.is_v4()) {
      r.range_end = r.range_end.Prev();
    }
  }
  return r;
}

Result<RangeSet> CanonicalizeRangeSet(const std::vector<RangeSpec>& specs) {
  if (specs.empty()) {
    return ConfigError("empty range set");
  }
  RangeSet set;
  for (size_t i = 0; i < specs.size(); ++i) {
    NG_ASSIGN_OR_RETURN(Range r, CanonicalizeRange(specs[i]));
    if (i > 0 && r.family() != set.ranges.front().family()) {
      return ConfigError("mixed address families");
    }
    set.ranges.push_back(r);
  }
  for (size_t i = 0; i < set.ranges.size(); ++i) {
    for (size_t j = i + 1; j < set.ranges.size(); ++j) {
      if (set.ranges[i].Overlaps(set.ranges[j])) {
        return ConfigError("subnets " + set.ranges[i].ToString() + " and " +
                           set.ranges[j].ToString() + " overlap");
      }
    }
  }
  return set;
}

}  // namespace nodegate::ipam
