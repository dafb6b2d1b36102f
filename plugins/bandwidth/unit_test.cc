// Unit tests of the bandwidth plugin's pure parts: config validation (the reference's
// messages), the TBF arithmetic against numbers observed on the reference, the psched clock,
// the ifb name/alias, u32 address keys, and the shape of the plan for every subnet mode.
#include <gtest/gtest.h>

#include <string>

#include "lib/base/hash.h"
#include "lib/cni/conf.h"
#include "lib/tc/objects.h"
#include "lib/tc/tbf.h"
#include "plugins/bandwidth/config.h"
#include "plugins/bandwidth/plan.h"

namespace nodegate::bandwidth {
namespace {

cni::NetConf Conf(const std::string& extra) {
  const std::string text = R"({"cniVersion":"1.0.0","name":"rnet","type":"bandwidth")" +
                           (extra.empty() ? std::string() : "," + extra) + "}";
  auto conf = cni::ParseNetConf(text);
  EXPECT_TRUE(conf.ok()) << text;
  return *conf;
}

// ---- validation -----------------------------------------------------------------------------

struct InvalidCase {
  std::string name;
  std::string extra;
  std::string want_msg;
};

class InvalidConfigTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidConfigTest, RejectedWithCode7AndMessage) {
  const InvalidCase& c = GetParam();
  Status s = ValidateConfig(Conf(c.extra));
  ASSERT_FALSE(s.ok()) << c.extra;
  EXPECT_EQ(s.error().code, kErrInvalidConfig);
  EXPECT_EQ(s.error().msg, c.want_msg);
}

INSTANTIATE_TEST_SUITE_P(
    Reference, InvalidConfigTest,
    ::testing::Values(
        InvalidCase{"IngressRateWithoutBurst", R"("ingressRate":1000000)",
                    "if rate is set, burst must also be set"},
        InvalidCase{"EgressBurstWithoutRate", R"("egressBurst":1000000)",
                    "if burst is set, rate must also be set"},
        InvalidCase{"BurstOver4GB", R"("ingressRate":1000,"ingressBurst":34359738360)",
                    "burst cannot be more than 4GB"},
        InvalidCase{"RuntimeConfigRateWithoutBurst",
                    R"("runtimeConfig":{"bandwidth":{"egressRate":8000}})",
                    "if rate is set, burst must also be set"},
        // A lone top-level key makes the top level win even over a complete runtimeConfig.
        InvalidCase{
            "TopLevelShadowsRuntime",
            R"("ingressRate":8000,"runtimeConfig":{"bandwidth":{"ingressRate":8000,"ingressBurst":8000}})",
            "if rate is set, burst must also be set"},
        InvalidCase{"Negative", R"("ingressRate":-5,"ingressBurst":8000)",
                    "ingressRate must be a non-negative integer (bits per second), got -5"},
        InvalidCase{"NonNumeric", R"("egressRate":"fast","egressBurst":8000)",
                    "egressRate must be a non-negative integer (bits per second), got \"fast\""},
        InvalidCase{"Fractional", R"("egressRate":1.5,"egressBurst":8000)",
                    "egressRate must be a non-negative integer (bits per second), got 1.5"},
        InvalidCase{"RateBelowOneByte", R"("ingressRate":7,"ingressBurst":8000)",
                    "ingressRate must be at least 8 bits per second"},
        InvalidCase{
            "BadSubnet",
            R"("ingressRate":8000,"ingressBurst":8000,"unshapedSubnets":["10.0.0.0/8","hello"])",
            "bad subnet \"hello\" provided, details invalid CIDR address: hello"},
        InvalidCase{
            "BothSubnetLists",
            R"("ingressRate":8000,"ingressBurst":8000,"unshapedSubnets":["10.0.0.0/8"],"shapedSubnets":["192.0.2.0/24"])",
            "unshapedSubnets and shapedSubnets cannot be both specified, one of them "
            "should be discarded"},
        InvalidCase{"SubnetsNotAList", R"("unshapedSubnets":"10.0.0.0/8")",
                    "unshapedSubnets must be a list of CIDR strings"}),
    [](const auto& info) { return info.param.name; });

TEST(ConfigTest, EveryProblemListedInDetails) {
  Status s = ValidateConfig(Conf(R"("ingressRate":-1,"egressRate":"x","egressBurst":1)"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().msg, "ingressRate must be a non-negative integer (bits per second), got -1");
  EXPECT_NE(s.error().details.find("egressRate must be a non-negative integer"), std::string::npos)
      << s.error().details;
}

TEST(ConfigTest, TopLevelRatesWin) {
  auto c = ParseBandwidthConfig(Conf(
      R"("ingressRate":16000,"ingressBurst":8000,"runtimeConfig":{"bandwidth":{"egressRate":8000,"egressBurst":8000}})"));
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->ingress.rate_bits, 16000u);
  EXPECT_FALSE(c->egress.enabled());  // runtimeConfig ignored entirely
}

TEST(ConfigTest, RuntimeConfigUsedWhenTopLevelSilent) {
  auto c = ParseBandwidthConfig(
      Conf(R"("runtimeConfig":{"bandwidth":{"egressRate":2000000,"egressBurst":500000}})"));
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->egress.rate_bits, 2000000u);
  EXPECT_EQ(c->egress.burst_bits, 500000u);
  EXPECT_FALSE(c->ingress.enabled());
}

TEST(ConfigTest, SubnetsFromConflistWithRuntimeRates) {
  auto c = ParseBandwidthConfig(Conf(
      R"("unshapedSubnets":["10.0.0.5/8","2001:db8::/32"],"runtimeConfig":{"bandwidth":{"ingressRate":8000,"ingressBurst":8000}})"));
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->ingress.rate_bits, 8000u);
  EXPECT_EQ(c->subnet_mode, SubnetMode::kUnshaped);
  ASSERT_EQ(c->subnets.size(), 2u);
  EXPECT_EQ(c->subnets[0].ToString(), "10.0.0.0/8");  // host bits cleared
}

TEST(ConfigTest, NothingConfiguredIsValid) {
  auto c = ParseBandwidthConfig(Conf(""));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->shapes_anything());
}

// ---- TBF arithmetic ----------------------------------------------------------------------------

const tc::PschedClock kClock;  // 000003e8 00000040 000f4240: 15.625 ticks/us

TEST(TbfTest, MatchesReferenceObservations) {
  // Observed on the reference: rate 1Mbit burst 125000b (limit 128125, buffer 15625000) and
  // rate 2Mbit burst 62500b (limit 68750, buffer 3906250).
  tc::TbfParams in = tc::ComputeTbf(1000000, 1000000, kClock);
  EXPECT_EQ(in.rate_bytes, 125000u);
  EXPECT_EQ(in.burst_bytes, 125000u);
  EXPECT_EQ(in.limit_bytes, 128125u);
  EXPECT_EQ(in.buffer_ticks, 15625000u);
  tc::TbfParams out = tc::ComputeTbf(2000000, 500000, kClock);
  EXPECT_EQ(out.rate_bytes, 250000u);
  EXPECT_EQ(out.limit_bytes, 68750u);
  EXPECT_EQ(out.buffer_ticks, 3906250u);
}

TEST(TbfTest, TinyRateFromReferenceTests) {
  // The reference's own tests use rate 8 / burst 8: one byte per second, one byte of bucket.
  tc::TbfParams p = tc::ComputeTbf(8, 8, kClock);
  EXPECT_EQ(p.rate_bytes, 1u);
  EXPECT_EQ(p.limit_bytes, 1u);  // uint32(1 * 0.025) + 1
  EXPECT_EQ(p.buffer_ticks, 15625000u);
}

TEST(TbfTest, KubernetesDefaultBurstWrapsLikeTheReference) {
  // kubelet passes a burst of MaxInt32 bits; at 1 Mbit/s the bucket is 2147 s of traffic,
  // which does not fit tc's 32-bit tick field. Go's conversion keeps the low 32 bits.
  tc::TbfParams p = tc::ComputeTbf(1000000, 2147483647, kClock);
  EXPECT_EQ(p.burst_bytes, 268435455u);
  EXPECT_EQ(p.buffer_ticks, 3489660803u);  // 33554431875 mod 2^32
  EXPECT_EQ(p.limit_bytes, 3125u + 268435455u);
  EXPECT_TRUE(tc::TbfBufferWrapped(1000000, 2147483647, kClock));
  EXPECT_FALSE(tc::TbfBufferWrapped(1000000, 1000000, kClock));
}

TEST(TbfTest, RateAbove32BitsKeepsFullRate) {
  tc::TbfParams p = tc::ComputeTbf(40'000'000'000ull, 8'000'000, kClock);
  EXPECT_EQ(p.rate_bytes, 5'000'000'000ull);
  EXPECT_EQ(p.limit_bytes, 125'000'000u + 1'000'000u);
  EXPECT_EQ(p.buffer_ticks, 3125u);  // 200 us * 15.625
}

TEST(TbfTest, GoFloatConversion) {
  EXPECT_EQ(tc::GoFloatToUint32(12.9), 12u);
  EXPECT_EQ(tc::GoFloatToUint32(4294967296.0 + 5), 5u);
  EXPECT_EQ(tc::GoFloatToUint32(1e300), 0u);
  EXPECT_EQ(tc::GoFloatToUint32(std::nan("")), 0u);
}

TEST(PschedTest, ParsesProcFormat) {
  auto c = tc::PschedClock::Parse("000003e8 00000040 000f4240 3b9aca00\n");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->TicksPerUsec(), 15.625);
  auto ghz = tc::PschedClock::Parse("000003e8 00000040 3b9aca00 3b9aca00\n");
  ASSERT_TRUE(ghz.ok());
  EXPECT_DOUBLE_EQ(ghz->TicksPerUsec(), 1000.0);  // t2us replaced by us2t, times 1e9/1e6
  EXPECT_FALSE(tc::PschedClock::Parse("garbage").ok());
}

// ---- names, keys, plans -------------------------------------------------------------------------

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

TEST(KeysTest, AddressKeys) {
  auto v4 = tc::AddressKeys(*net::IpPrefix::Parse("198.51.100.7/24"), /*source=*/false);
  ASSERT_EQ(v4.size(), 1u);
  EXPECT_EQ(v4[0], (tc::U32Key{.mask = 0xffffff00, .value = 0xc6336400, .offset = 16}));
  auto v4src = tc::AddressKeys(*net::IpPrefix::Parse("10.0.0.0/8"), /*source=*/true);
  EXPECT_EQ(v4src[0].offset, 12);
  auto v6 = tc::AddressKeys(*net::IpPrefix::Parse("2001:db8:abcd:1234:e000::/68"), false);
  ASSERT_EQ(v6.size(), 3u);  // 32 + 32 + 4 bits; the zero-mask words are left out
  EXPECT_EQ(v6[0], (tc::U32Key{.mask = 0xffffffff, .value = 0x20010db8, .offset = 24}));
  EXPECT_EQ(v6[2], (tc::U32Key{.mask = 0xf0000000, .value = 0xe0000000, .offset = 32}));
  EXPECT_EQ(tc::AddressKeys(*net::IpPrefix::Parse("0.0.0.0/0"), false), tc::MatchAllKeys());
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
