#include "ipam/cluster/pool.h"

#include <algorithm>

namespace nodegate::ipam::cluster {
namespace {

__extension__ using U128 = unsigned __int128;

constexpr uint64_t kMaxBlocks = uint64_t{1} << 62;

U128 ToNumber(const net::IpAddress& ip) {
  U128 value = 0;
  for (int i = 0; i < ip.byte_length(); ++i) value = (value << 8) | ip.bytes()[i];
  return value;
}

net::IpAddress FromNumber(net::Family family, U128 value) {
  uint8_t bytes[16] = {};
  const int n = family == net::Family::kV4 ? 4 : 16;
  for (int i = n - 1; i >= 0; --i) {
    bytes[i] = static_cast<uint8_t>(value & 0xff);
    value >>= 8;
  }
  return net::IpAddress::FromBytes(family, bytes);
}

int HostBits(const net::IpPrefix& block) { return block.address().bit_length() - block.length(); }

}  // namespace

RangeBlocks::RangeBlocks(const Range& range, int block_size) : block_size_(block_size) {
  const int bits = range.range_start.bit_length();
  const int shift = bits - block_size;
  const U128 first = ToNumber(range.range_start) >> shift;
  const U128 last = ToNumber(range.range_end) >> shift;
  first_ = FromNumber(range.family(), first << shift);
  const U128 count = last - first + 1;
  count_ = count > kMaxBlocks ? kMaxBlocks : static_cast<uint64_t>(count);
}

net::IpPrefix RangeBlocks::At(uint64_t index) const {
  const int shift = first_.bit_length() - block_size_;
  return net::IpPrefix(
      FromNumber(first_.family(), ToNumber(first_) + (static_cast<U128>(index) << shift)),
      block_size_);
}

std::optional<uint64_t> RangeBlocks::IndexOf(const net::IpPrefix& block) const {
  if (block.length() != block_size_ || block.family() != first_.family() ||
      block.Network() != block.address() || block.address() < first_) {
    return std::nullopt;
  }
  const int shift = first_.bit_length() - block_size_;
  const U128 index = (ToNumber(block.address()) - ToNumber(first_)) >> shift;
  if (index >= count_) return std::nullopt;
  return static_cast<uint64_t>(index);
}

uint64_t BlockCapacity(const net::IpPrefix& block) { return uint64_t{1} << HostBits(block); }

net::IpAddress AddressAt(const net::IpPrefix& block, uint64_t ordinal) {
  return FromNumber(block.family(), ToNumber(block.Network()) + ordinal);
}

uint64_t OrdinalOf(const net::IpPrefix& block, const net::IpAddress& ip) {
  return static_cast<uint64_t>(ToNumber(ip) - ToNumber(block.Network()));
}

net::IpPrefix BlockOf(const net::IpAddress& ip, int block_size) {
  return net::IpPrefix(ip, block_size).Masked();
}

bool Usable(const Range& range, const net::IpAddress& ip) {
  return range.Contains(ip) && ip != range.gateway;
}

uint64_t UsableCount(const net::IpPrefix& block, const Range& range) {
  // The block's part of [rangeStart, rangeEnd], minus the gateway when it falls there.
  const U128 start = std::max(ToNumber(block.Network()), ToNumber(range.range_start));
  const U128 end = std::min(ToNumber(block.LastAddress()), ToNumber(range.range_end));
  if (start > end || !range.subnet.Overlaps(block)) return 0;
  uint64_t n = static_cast<uint64_t>(end - start + 1);
  const U128 gw = ToNumber(range.gateway);
  if (range.gateway.family() == range.family() && gw >= start && gw <= end) --n;
  return n;
}

std::optional<Place> LocateBlock(const Pool& pool, const net::IpPrefix& block) {
  for (size_t s = 0; s < pool.sets.size(); ++s) {
    const PoolSet& set = pool.sets[s];
    for (size_t r = 0; r < set.range_set.ranges.size(); ++r) {
      const Range& range = set.range_set.ranges[r];
      if (RangeBlocks(range, set.block_sizes[r]).IndexOf(block) && UsableCount(block, range) > 0) {
        return Place{s, r};
      }
    }
  }
  return std::nullopt;
}

std::optional<Place> LocateAddress(const Pool& pool, const net::IpAddress& ip) {
  for (size_t s = 0; s < pool.sets.size(); ++s) {
    const auto& ranges = pool.sets[s].range_set.ranges;
    for (size_t r = 0; r < ranges.size(); ++r) {
      if (ranges[r].Contains(ip)) return Place{s, r};
    }
  }
  return std::nullopt;
}

SetBlocks::SetBlocks(const PoolSet& set) {
  for (size_t r = 0; r < set.range_set.ranges.size(); ++r) {
    ranges_.emplace_back(set.range_set.ranges[r], set.block_sizes[r]);
    starts_.push_back(total_);
    total_ = std::min(kMaxBlocks, total_ + ranges_.back().count());
  }
}

std::pair<net::IpPrefix, size_t> SetBlocks::At(uint64_t index) const {
  size_t r = ranges_.size() - 1;
  while (r > 0 && starts_[r] > index) --r;
  return {ranges_[r].At(index - starts_[r]), r};
}

uint64_t StableHash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace nodegate::ipam::cluster
