// bandwidth's config validation: the reference's messages for each invalid combination, and
// which of the top-level keys and runtimeConfig wins.
#include "plugins/bandwidth/config.h"

#include <gtest/gtest.h>

#include <string>

#include "lib/cni/conf.h"

namespace nodegate::bandwidth {
namespace {

cni::NetConf Conf(const std::string& extra) {
  const std::string text = R"({"cniVersion":"1.0.0","name":"rnet","type":"bandwidth")" +
                           (extra.empty() ? std::string() : "," + extra) + "}";
  auto conf = cni::ParseNetConf(text);
  EXPECT_TRUE(conf.ok()) << text;
  return *conf;
}

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

}  // namespace
}  // namespace nodegate::bandwidth
