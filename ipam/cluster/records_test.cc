#include "ipam/cluster/records.h"

#include <gtest/gtest.h>

namespace nodegate::ipam::cluster {
namespace {

net::IpPrefix P(const char* text) { return *net::IpPrefix::Parse(text); }
net::IpAddress A(const char* text) { return *net::IpAddress::Parse(text); }

Pool TwoSets() {
  Pool pool;
  pool.sets.push_back({*CanonicalizeRangeSet({RangeSpec{.subnet = P("10.244.0.0/16")}}), {26}});
  pool.sets.push_back({*CanonicalizeRangeSet({RangeSpec{.subnet = P("fd00:244::/48")}}), {122}});
  return pool;
}

TEST(Records, EveryRecordRoundTrips) {
  const Pool pool = TwoSets();
  auto decoded_pool = DecodePool("k", EncodePool(pool, "2026-12-06T05:00:00Z"));
  ASSERT_TRUE(decoded_pool.ok()) << decoded_pool.error().msg;
  EXPECT_TRUE(SamePool(*decoded_pool, pool));

  const Claim claim{P("10.244.0.64/26"), "node-1", "2026-12-06T05:00:00Z"};
  auto c = DecodeClaim("k", EncodeClaim(claim));
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(*c, claim);

  Block block{P("10.244.0.64/26"), "node-1", 7, {}};
  block.allocations[2] = {"abc/eth0", "0123456789abcdef", ""};
  block.allocations[63] = {"def/net1", "fedcba9876543210", "node-2"};
  auto b = DecodeBlock("k", EncodeBlock(block));
  ASSERT_TRUE(b.ok()) << b.error().msg;
  EXPECT_EQ(*b, block);

  Handle handle{"net1",
                "abc",
                "eth0",
                "node-1",
                "0123456789abcdef",
                {{A("10.244.0.66"), P("10.244.0.64/26"), "node-1"},
                 {A("fd00:244::42"), P("fd00:244::40/122"), "node-2"}},
                {"default", "web-1", "uid-1", "infra"},
                "2026-12-06T05:00:00Z"};
  auto h = DecodeHandle("k", EncodeHandle(handle));
  ASSERT_TRUE(h.ok()) << h.error().msg;
  EXPECT_EQ(*h, handle);
}

TEST(Records, RefusesWhatWeNeverWriteNamingTheKey) {
  const char* blocks[] = {
      "",
      "[]",
      R"({"format":2,"block":"10.0.0.0/26","node":"n","next":0,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.1/26","node":"n","next":0,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.0/16","node":"n","next":0,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n/x","next":0,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":64,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":0,"allocations":[]})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":0,"allocations":{"64":{"handle":"a/eth0","aid":"0123456789abcdef"}}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":0,"allocations":{"01":{"handle":"a/eth0","aid":"0123456789abcdef"}}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":0,"allocations":{"1":{"handle":"a","aid":"0123456789abcdef"}}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":0,"allocations":{"1":{"handle":"a/eth0","aid":"XYZ"}}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":-1,"allocations":{}})",
      R"({"format":1,"block":"10.0.0.0/26","node":"n","next":1.5,"allocations":{}})",
  };
  for (const char* value : blocks) {
    auto b = DecodeBlock("/p/n/nodes/n/blocks/10.0.0.0-26", value);
    ASSERT_FALSE(b.ok()) << value;
    EXPECT_EQ(b.error().code, kErrStoreCorrupt);
    EXPECT_EQ(b.error().msg.rfind("/p/n/nodes/n/blocks/10.0.0.0-26: ", 0), 0u) << b.error().msg;
  }
  const char* handles[] = {
      R"({"format":1,"network":"n","containerID":"c","ifname":"eth0","node":"x","aid":"0123456789abcdef","addresses":[{"ip":"10.0.1.1","block":"10.0.0.0/26","blockNode":"x"}]})",
      R"({"format":1,"network":"n","containerID":"c","ifname":"a/b","node":"x","aid":"0123456789abcdef","addresses":[]})",
      R"({"format":1,"network":"n","containerID":"c","ifname":"eth0","node":"x","aid":"0123456789abcdef","addresses":[{"ip":"010.0.0.1","block":"10.0.0.0/26","blockNode":"x"}]})",
      R"({"format":1,"network":"n","containerID":"c","ifname":"eth0","node":"x","aid":"0123456789abcdef","addresses":{}})",
      R"({"format":1,"network":"n","containerID":"c","ifname":"eth0","node":"x","aid":"0123456789abcdef","addresses":[],"pod":[]})",
      R"({"format":1,"network":"n","containerID":"c","ifname":"eth0","node":"x","aid":"0123456789abcdef","addresses":[],"pod":{"name":"a\u0001"}})",
  };
  for (const char* value : handles) {
    auto h = DecodeHandle("k", value);
    ASSERT_FALSE(h.ok()) << value;
    EXPECT_EQ(h.error().code, kErrStoreCorrupt);
  }
  const char* pools[] = {
      R"({"format":1,"rangeSets":[]})",
      R"({"format":1,"rangeSets":[[{"subnet":"10.0.0.0/16","rangeStart":"10.0.0.1","rangeEnd":"10.0.255.254","gateway":"10.0.0.1","blockSize":8}]]})",
      R"({"format":1,"rangeSets":[[{"subnet":"10.0.0.0/16","rangeStart":"10.0.0.1","rangeEnd":"10.0.255.254","gateway":"10.0.0.1","blockSize":33}]]})",
      R"({"format":1,"rangeSets":[[{"subnet":"10.0.0.0/16","rangeStart":"10.1.0.1","rangeEnd":"10.0.255.254","gateway":"10.0.0.1","blockSize":26}]]})",
      R"({"format":1,"rangeSets":[[{"subnet":"10.0.0.0/16","blockSize":26}]]})",
  };
  for (const char* value : pools) {
    auto p = DecodePool("k", value);
    ASSERT_FALSE(p.ok()) << value;
    EXPECT_EQ(p.error().code, kErrStoreCorrupt);
  }
}

TEST(Records, SamePoolComparesEveryAllocatingField) {
  const Pool a = TwoSets();
  Pool b = a;
  EXPECT_TRUE(SamePool(a, b));
  b.sets[0].block_sizes[0] = 27;
  EXPECT_FALSE(SamePool(a, b));
  b = a;
  b.sets[1].range_set.ranges[0].gateway = A("fd00:244::2");
  EXPECT_FALSE(SamePool(a, b));
  b = a;
  b.sets.pop_back();
  EXPECT_FALSE(SamePool(a, b));
  EXPECT_NE(DescribePool(a).find("10.244.0.0/16 (10.244.0.1-10.244.255.254, gateway 10.244.0.1, "
                                 "blockSize 26)"),
            std::string::npos)
      << DescribePool(a);
}

TEST(Records, NamesAndIds) {
  EXPECT_TRUE(ValidNodeName("ip-10-0-0-5.ec2.internal"));
  EXPECT_FALSE(ValidNodeName(""));
  EXPECT_FALSE(ValidNodeName("a/b"));
  EXPECT_FALSE(ValidNodeName(std::string(254, 'a')));
  const std::string id = NewAllocationId();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_NE(id, NewAllocationId());
  EXPECT_EQ(NowRfc3339().size(), 20u);
}

}  // namespace
}  // namespace nodegate::ipam::cluster
