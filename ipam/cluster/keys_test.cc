#include "ipam/cluster/keys.h"

#include <gtest/gtest.h>

namespace nodegate::ipam::cluster {
namespace {

net::IpPrefix P(const char* text) { return *net::IpPrefix::Parse(text); }

TEST(BlockName, RoundTripsAndRefusesOtherSpellings) {
  EXPECT_EQ(BlockName(P("10.244.0.64/26")), "10.244.0.64-26");
  EXPECT_EQ(BlockName(P("fd00:244::40/122")), "fd00:244::40-122");
  EXPECT_EQ(ParseBlockName("10.244.0.64-26"), P("10.244.0.64/26"));
  EXPECT_EQ(ParseBlockName("fd00:244::40-122"), P("fd00:244::40/122"));
  for (const char* bad : {"10.244.0.65-26", "10.244.0.64-33", "10.244.0.64", "10.244.0.64-",
                          "fd00:0244::40-122", "10.244.0.64-026", "x-26", "10.244.0.64/26"}) {
    EXPECT_FALSE(ParseBlockName(bad).has_value()) << bad;
  }
}

TEST(Keys, LayoutAndParsersAgree) {
  const Keys keys("/nodegate/ipam/", "net1");
  EXPECT_EQ(keys.Pool(), "/nodegate/ipam/net1/pool");
  EXPECT_EQ(keys.Claim(P("10.0.0.0/26")), "/nodegate/ipam/net1/blocks/10.0.0.0-26");
  EXPECT_EQ(keys.NodeBlock("node-1", P("10.0.0.0/26")),
            "/nodegate/ipam/net1/nodes/node-1/blocks/10.0.0.0-26");
  EXPECT_EQ(keys.Handle("abc", "eth0"), "/nodegate/ipam/net1/handles/abc/eth0");
  EXPECT_EQ(keys.NodeHandle("node-1", "abc", "eth0"),
            "/nodegate/ipam/net1/nodes/node-1/handles/abc/eth0");

  EXPECT_EQ(keys.BlockOfClaim(keys.Claim(P("10.0.0.64/26"))), P("10.0.0.64/26"));
  const auto node_block = keys.NodeBlockOf(keys.NodeBlock("n.2", P("fd00::/122")));
  ASSERT_TRUE(node_block.has_value());
  EXPECT_EQ(node_block->first, "n.2");
  EXPECT_EQ(node_block->second, P("fd00::/122"));
  EXPECT_EQ(keys.HandleOf(keys.Handle("c1", "net0")),
            (std::pair<std::string, std::string>{"c1", "net0"}));
  EXPECT_EQ(keys.NodeHandleOf("n1", keys.NodeHandle("n1", "c1", "eth1")),
            (std::pair<std::string, std::string>{"c1", "eth1"}));

  EXPECT_FALSE(keys.HandleOf("/nodegate/ipam/net1/handles/c1").has_value());
  EXPECT_FALSE(keys.HandleOf("/nodegate/ipam/net1/handles/c1/eth0/x").has_value());
  EXPECT_FALSE(keys.BlockOfClaim("/nodegate/ipam/net2/blocks/10.0.0.0-26").has_value());
  EXPECT_FALSE(keys.NodeBlockOf("/nodegate/ipam/net1/nodes//blocks/10.0.0.0-26").has_value());
  EXPECT_FALSE(keys.NodeHandleOf("n2", keys.NodeHandle("n1", "c1", "eth1")).has_value());
}

}  // namespace
}  // namespace nodegate::ipam::cluster
