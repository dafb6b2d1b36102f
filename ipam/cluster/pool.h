#pragma once
// The pool as blocks: each range of a range set (host-local's Range, canonical) is cut into the
// aligned blocks of its subnet of `blockSize` bits, and only blocks holding at least one
// address of [rangeStart, rangeEnd] other than the gateway count. A block is what a node
// claims; inside it an address is named by its ordinal, its offset from the block's start.
//
//   range 10.244.0.0/16, blockSize 26: blocks 10.244.0.0/26, 10.244.0.64/26, ... (1,024), each
//   of 64 ordinals; 10.244.0.0/26 holds 62 usable ones (.0 is not in the range, .1 the gateway).
//
// Pure arithmetic, no I/O (pool_test.cc).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ipam/range.h"
#include "lib/net/ip.h"

namespace nodegate::ipam::cluster {

// Block sizes allowed: at most 4,096 addresses per block (a full block's record stays far
// below etcd's 1.5 MiB request limit) and no more than the range's subnet.
inline constexpr int kMinBlockSizeV4 = 20;
inline constexpr int kMinBlockSizeV6 = 116;
inline constexpr int kDefaultBlockSizeV4 = 26;
inline constexpr int kDefaultBlockSizeV6 = 122;

struct PoolSet {
  RangeSet range_set;
  std::vector<int> block_sizes;  // one per range of range_set
  net::Family family() const { return range_set.family(); }
};

struct Pool {
  std::vector<PoolSet> sets;
};

// Where a block or an address sits in the pool.
struct Place {
  size_t set = 0;
  size_t range = 0;
};

// The blocks of one range.
class RangeBlocks {
 public:
  RangeBlocks(const Range& range, int block_size);

  // How many blocks; beyond 2^62 only the first 2^62 are used (a /48 of /122 blocks has 2^74).
  uint64_t count() const { return count_; }
  net::IpPrefix At(uint64_t index) const;
  // The index of an aligned block of this range, nullopt otherwise.
  std::optional<uint64_t> IndexOf(const net::IpPrefix& block) const;

 private:
  int block_size_;
  net::IpAddress first_;  // the first block's network address
  uint64_t count_ = 0;
};

// Addresses in a block.
uint64_t BlockCapacity(const net::IpPrefix& block);
net::IpAddress AddressAt(const net::IpPrefix& block, uint64_t ordinal);
uint64_t OrdinalOf(const net::IpPrefix& block, const net::IpAddress& ip);  // ip in block
// The block of `block_size` bits that holds ip.
net::IpPrefix BlockOf(const net::IpAddress& ip, int block_size);

// An address allocations may use: inside the range and not its gateway.
bool Usable(const Range& range, const net::IpAddress& ip);
uint64_t UsableCount(const net::IpPrefix& block, const Range& range);

// The place of a block of the pool (aligned, of its range's block size, with usable
// addresses), or nullopt.
std::optional<Place> LocateBlock(const Pool& pool, const net::IpPrefix& block);
// The place of the range that holds ip, or nullopt.
std::optional<Place> LocateAddress(const Pool& pool, const net::IpAddress& ip);

// The blocks of a range set, concatenated over its ranges, for choosing a block to claim.
class SetBlocks {
 public:
  explicit SetBlocks(const PoolSet& set);
  uint64_t count() const { return total_; }
  // Block `index` of the set and its range.
  std::pair<net::IpPrefix, size_t> At(uint64_t index) const;

 private:
  std::vector<RangeBlocks> ranges_;
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
};

// A stable 64-bit hash (FNV-1a) for spreading nodes over blocks and members.
uint64_t StableHash(std::string_view text);

}  // namespace nodegate::ipam::cluster
