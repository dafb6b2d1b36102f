// The shaping plan as data: the ifb's name and alias, and the qdiscs, classes and filters of
// each subnet mode (tc::Describe text, as `tc` would print them).
#include "plugins/bandwidth/plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/net/ip.h"
#include "lib/tc/objects.h"
#include "lib/tc/tbf.h"

namespace nodegate::bandwidth {
namespace {

// 000003e8 00000040 000f4240 in /proc/net/psched: 15.625 ticks/us.
const tc::PschedClock kClock;

TEST(NamesTest, IfbNameIsTheReferenceName) {
  EXPECT_EQ(IfbName("rnet", "ctr1"), "bwp6ef8579d92ac");  // observed from the reference
  EXPECT_EQ(IfbName("rnet", std::string(300, 'x')).size(), 15u);
}

TEST(NamesTest, IfbNameAndAlias) {
  EXPECT_EQ(IfbName("rnet", "ctr1"), "bwp6ef8579d92ac");
  Attachment a{.network = "rnet", .container_id = "ctr1", .ifname = "eth0"};
  EXPECT_EQ(IfbAlias(a), "nodegate/bandwidth rnet ctr1 eth0");
  auto back = ParseIfbAlias(IfbAlias(a));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->container_id, "ctr1");
  EXPECT_EQ(back->ifname, "eth0");
  EXPECT_FALSE(ParseIfbAlias("").has_value());
  EXPECT_FALSE(ParseIfbAlias("something else entirely here").has_value());
  EXPECT_FALSE(ParseIfbAlias("nodegate/bandwidth rnet ctr1 eth0 extra").has_value());
}

// Issue 13 row 5: the alias always fits the kernel's 255 bytes; the plain form is kept
// whenever it fits (ifbs of earlier versions stay recognised).
TEST(PlanTest, IfbAliasFitsTheKernelLimit) {
  const std::string prefix = "nodegate/bandwidth ";
  // Exactly 255 bytes: plain.
  Attachment fits{.network = "n", .container_id = "", .ifname = "eth0"};
  fits.container_id = std::string(255 - prefix.size() - 1 - 1 - 1 - 4, 'c');
  EXPECT_EQ(IfbAlias(fits).size(), 255u);
  EXPECT_EQ(IfbAlias(fits), prefix + "n " + fits.container_id + " eth0");
  // One byte more, and the longest values: hashed, at most 255 bytes, still parsed and matched.
  Attachment over = fits;
  over.container_id += "c";
  Attachment longest{.network = std::string(4096, 'n'),
                     .container_id = std::string(4096, 'c'),
                     .ifname = std::string(15, 'i')};
  for (const Attachment& a : {over, longest}) {
    const std::string alias = IfbAlias(a);
    EXPECT_LE(alias.size(), 255u) << alias;
    auto back = ParseIfbAlias(alias);
    ASSERT_TRUE(back.has_value()) << alias;
    EXPECT_TRUE(AliasFieldIs(back->network, a.network));
    EXPECT_TRUE(AliasFieldIs(back->container_id, a.container_id));
    EXPECT_FALSE(AliasFieldIs(back->container_id, a.container_id + "x"));
    EXPECT_FALSE(AliasFieldIs(back->network, "rnet"));
    EXPECT_EQ(back->ifname, a.ifname);
  }
  EXPECT_TRUE(AliasFieldIs("rnet", "rnet"));
  EXPECT_FALSE(AliasFieldIs("rnet", "rnet2"));
}

BandwidthConfig Shaped(SubnetMode mode, std::vector<std::string> subnets) {
  BandwidthConfig c;
  c.ingress = {.rate_bits = 1000000, .burst_bits = 1000000};
  c.egress = {.rate_bits = 2000000, .burst_bits = 500000};
  c.subnet_mode = mode;
  for (const auto& s : subnets) {
    c.subnets.push_back(net::IpPrefix::Parse(s)->Masked());
  }
  return c;
}

const Attachment kAttachment{.network = "rnet", .container_id = "ctr1", .ifname = "eth0"};

TEST(PlanTest, AllShapedIsTheReferenceLayout) {
  ShapingPlan p = BuildPlan(Shaped(SubnetMode::kAll, {}), kAttachment, kClock);
  ASSERT_EQ(p.host_root.size(), 1u);
  EXPECT_EQ(tc::Describe(p.host_root[0]),
            "tbf 1: parent root rate 125000B/s buffer 15625000 ticks limit 128125B");
  EXPECT_TRUE(p.host_root_filters.empty());
  ASSERT_TRUE(p.ifb.has_value());
  EXPECT_EQ(p.ifb->name, "bwp6ef8579d92ac");
  EXPECT_EQ(tc::Describe(p.ifb->root),
            "tbf 1: parent root rate 250000B/s buffer 3906250 ticks limit 68750B");
  ASSERT_EQ(p.host_ingress_filters.size(), 1u);
  // One redirect action (the reference installs two).
  EXPECT_EQ(tc::Describe(p.host_ingress_filters[0]),
            "u32 parent ffff: pref 1 protocol all match 00000000/00000000 at 0 flowid 1:1 "
            "action mirred egress redirect ifindex 0 stolen");
  auto resolved = ResolveRedirects(p.host_ingress_filters, 42);
  EXPECT_EQ(resolved[0].actions[0].ifindex, 42);
}

TEST(PlanTest, UnshapedSubnetsExemptByAddressAndShapeTheRest) {
  ShapingPlan p = BuildPlan(Shaped(SubnetMode::kUnshaped, {"198.51.100.0/24", "2001:db8:5::/48"}),
                            kAttachment, kClock);
  ASSERT_EQ(p.host_root.size(), 2u);
  EXPECT_EQ(tc::Describe(p.host_root[0]), "htb 1: parent root default 1 direct_qlen 1000");
  EXPECT_EQ(tc::Describe(p.host_root[1]), "bfifo 2: parent 1:1 limit 128125B");
  ASSERT_EQ(p.host_root_classes.size(), 1u);
  // ceil = rate (v1.5 used twice the rate), the TBF's buffer, an explicit quantum.
  EXPECT_EQ(tc::Describe(p.host_root_classes[0]),
            "htb class 1:1 parent 1: rate 125000B/s ceil 125000B/s buffer 15625000 cbuffer "
            "15625000 quantum 60000 prio 0");
  ASSERT_EQ(p.host_root_filters.size(), 2u);
  // To the container: match the remote SOURCE, send it to HTB's direct (unshaped) queue.
  EXPECT_EQ(tc::Describe(p.host_root_filters[0]),
            "u32 parent 1: pref 1 protocol ip match c6336400/ffffff00 at 12 flowid 1:");
  EXPECT_EQ(p.host_root_filters[1].pref, kPrefIpv6);
  EXPECT_EQ(p.host_root_filters[1].keys[0].offset, 8);
  ASSERT_EQ(p.host_ingress_filters.size(), 3u);
  // From the container: match the DESTINATION and stop (no redirect); redirect the rest.
  EXPECT_EQ(tc::Describe(p.host_ingress_filters[0]),
            "u32 parent ffff: pref 1 protocol ip match c6336400/ffffff00 at 16 flowid 1:1");
  EXPECT_TRUE(p.host_ingress_filters[0].actions.empty());
  EXPECT_EQ(p.host_ingress_filters[1].keys[0].offset, 24);
  EXPECT_EQ(p.host_ingress_filters[2].pref, kPrefCatchAll);
  EXPECT_EQ(p.host_ingress_filters[2].keys, tc::MatchAllKeys());
  EXPECT_EQ(p.host_ingress_filters[2].actions.size(), 1u);
}

TEST(PlanTest, ShapedSubnetsShapeOnlyThem) {
  ShapingPlan p = BuildPlan(Shaped(SubnetMode::kShaped, {"203.0.113.0/24"}), kAttachment, kClock);
  EXPECT_EQ(p.host_root[0].htb_default, 0u);  // no class 1:0: unclassified traffic goes direct
  ASSERT_EQ(p.host_root_filters.size(), 1u);
  EXPECT_EQ(p.host_root_filters[0].classid, tc::MakeHandle(1, 1));
  ASSERT_EQ(p.host_ingress_filters.size(), 1u);  // no catch-all redirect
  EXPECT_EQ(tc::Describe(p.host_ingress_filters[0]),
            "u32 parent ffff: pref 1 protocol ip match cb007100/ffffff00 at 16 flowid 1:1 "
            "action mirred egress redirect ifindex 0 stolen");
}

TEST(PlanTest, OnlyConfiguredDirections) {
  BandwidthConfig c;
  c.egress = {.rate_bits = 8000, .burst_bits = 8000};
  ShapingPlan p = BuildPlan(c, kAttachment, kClock);
  EXPECT_TRUE(p.host_root.empty());
  EXPECT_TRUE(p.ifb.has_value());
  c = BandwidthConfig{};
  c.ingress = {.rate_bits = 8000, .burst_bits = 8000};
  p = BuildPlan(c, kAttachment, kClock);
  EXPECT_FALSE(p.ifb.has_value());
  EXPECT_TRUE(p.host_ingress_filters.empty());
}

}  // namespace
}  // namespace nodegate::bandwidth
