#include "ipam/cluster/pool.h"

#include <gtest/gtest.h>

namespace nodegate::ipam::cluster {
namespace {

net::IpPrefix P(const char* text) { return *net::IpPrefix::Parse(text); }
net::IpAddress A(const char* text) { return *net::IpAddress::Parse(text); }

Range MakeRange(const char* subnet, const char* start = nullptr, const char* end = nullptr) {
  RangeSpec spec{.subnet = P(subnet)};
  if (start) spec.range_start = A(start);
  if (end) spec.range_end = A(end);
  return *CanonicalizeRange(spec);
}

TEST(RangeBlocks, CutsTheSubnetIntoAlignedBlocks) {
  const Range r = MakeRange("10.244.0.0/16");
  const RangeBlocks blocks(r, 26);
  EXPECT_EQ(blocks.count(), 1024u);
  EXPECT_EQ(blocks.At(0), P("10.244.0.0/26"));
  EXPECT_EQ(blocks.At(1), P("10.244.0.64/26"));
  EXPECT_EQ(blocks.At(1023), P("10.244.255.192/26"));
  EXPECT_EQ(blocks.IndexOf(P("10.244.1.0/26")), 4u);
  EXPECT_FALSE(blocks.IndexOf(P("10.244.1.0/25")).has_value());   // another size
  EXPECT_FALSE(blocks.IndexOf(P("10.245.0.0/26")).has_value());   // outside
  EXPECT_FALSE(blocks.IndexOf(P("10.244.1.32/26")).has_value());  // unaligned
}

TEST(RangeBlocks, OnlyBlocksWithAddressesOfTheRange) {
  const Range r = MakeRange("10.0.0.0/24", "10.0.0.100", "10.0.0.140");
  const RangeBlocks blocks(r, 26);
  EXPECT_EQ(blocks.count(), 2u);  // .64/26 and .128/26
  EXPECT_EQ(blocks.At(0), P("10.0.0.64/26"));
  EXPECT_EQ(UsableCount(P("10.0.0.64/26"), r), 28u);   // .100-.127
  EXPECT_EQ(UsableCount(P("10.0.0.128/26"), r), 13u);  // .128-.140
  EXPECT_EQ(UsableCount(P("10.0.0.0/26"), r), 0u);
}

TEST(RangeBlocks, HugeIpv6PoolsAreCappedNotOverflowed) {
  const Range r = MakeRange("fd00:244::/48");
  const RangeBlocks blocks(r, 122);
  EXPECT_EQ(blocks.count(), uint64_t{1} << 62);
  EXPECT_EQ(blocks.At(1), P("fd00:244::40/122"));
  EXPECT_EQ(blocks.At((uint64_t{1} << 62) - 1).address().ToString(),
            "fd00:244:0:f:ffff:ffff:ffff:ffc0");
  EXPECT_EQ(blocks.IndexOf(P("fd00:244::1:0/122")), 1024u);
}

TEST(Ordinals, AddressArithmetic) {
  EXPECT_EQ(BlockCapacity(P("10.0.0.64/26")), 64u);
  EXPECT_EQ(AddressAt(P("10.0.0.64/26"), 5), A("10.0.0.69"));
  EXPECT_EQ(OrdinalOf(P("10.0.0.64/26"), A("10.0.0.127")), 63u);
  EXPECT_EQ(AddressAt(P("fd00::40/122"), 63), A("fd00::7f"));
  EXPECT_EQ(BlockOf(A("10.244.3.77"), 26), P("10.244.3.64/26"));
}

TEST(Usable, ExcludesGatewayAndOutOfRange) {
  const Range r = MakeRange("10.244.0.0/16");
  EXPECT_FALSE(Usable(r, A("10.244.0.0")));  // network (not in the range)
  EXPECT_FALSE(Usable(r, A("10.244.0.1")));  // gateway
  EXPECT_TRUE(Usable(r, A("10.244.0.2")));
  EXPECT_FALSE(Usable(r, A("10.244.255.255")));  // broadcast
  EXPECT_EQ(UsableCount(P("10.244.0.0/26"), r), 62u);
  EXPECT_EQ(UsableCount(P("10.244.0.64/26"), r), 64u);
  EXPECT_EQ(UsableCount(P("10.244.255.192/26"), r), 63u);
}

TEST(Locate, BlocksAndAddressesOfAPool) {
  Pool pool;
  pool.sets.push_back({RangeSet{{MakeRange("10.1.0.0/24"), MakeRange("10.2.0.0/24")}}, {26, 28}});
  pool.sets.push_back({RangeSet{{MakeRange("fd00::/120")}}, {122}});
  EXPECT_EQ(LocateBlock(pool, P("10.2.0.16/28"))->range, 1u);
  EXPECT_EQ(LocateBlock(pool, P("fd00::40/122"))->set, 1u);
  EXPECT_FALSE(LocateBlock(pool, P("10.2.0.0/26")).has_value());
  EXPECT_FALSE(LocateBlock(pool, P("10.3.0.0/26")).has_value());
  EXPECT_EQ(LocateAddress(pool, A("10.2.0.9"))->range, 1u);
  EXPECT_FALSE(LocateAddress(pool, A("10.2.0.255")).has_value());

  const SetBlocks set0(pool.sets[0]);
  EXPECT_EQ(set0.count(), 4u + 16u);
  EXPECT_EQ(set0.At(3).first, P("10.1.0.192/26"));
  EXPECT_EQ(set0.At(4), (std::pair<net::IpPrefix, size_t>{P("10.2.0.0/28"), 1}));
}

}  // namespace
}  // namespace nodegate::ipam::cluster
