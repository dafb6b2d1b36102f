// Flags that become capability arguments: port mappings, rates and bursts in tc's units.
#include "cmd/nodegate/cni/capability_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nodegate::runtime {
namespace {

using ::testing::HasSubstr;

TEST(ParsePortMappingTest, Forms) {
  EXPECT_EQ(*ParsePortMapping("8080:80"),
            cni::Json::parse(R"({"hostPort":8080,"containerPort":80,"protocol":"tcp"})"));
  EXPECT_EQ(*ParsePortMapping("5353:53/UDP@192.0.2.1"),
            cni::Json::parse(
                R"({"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"192.0.2.1"})"));
  EXPECT_EQ(*ParsePortMapping("9000:9000/sctp@2001:DB8::0:1"),
            cni::Json::parse(R"({"hostPort":9000,"containerPort":9000,"protocol":"sctp",
                                 "hostIP":"2001:db8::1"})"));
}

TEST(ParsePortMappingTest, Errors) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"8080", "expected HOST:CONTAINER"},
      {"0:80", "invalid host port \"0\""},
      {"80:65536", "invalid container port"},
      {"a:80", "invalid host port"},
      {"80:80/icmp", "invalid protocol \"icmp\""},
      {"80:80@300.1.1.1", "invalid host IP"},
      {":80", "invalid host port"},
  };
  for (const auto& c : cases) {
    auto r = ParsePortMapping(c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_EQ(r.error().code, kErrInvalidConfig);
    EXPECT_THAT(r.error().msg, HasSubstr(c.want)) << c.in;
  }
}

TEST(ParseRateTest, TcUnits) {
  EXPECT_EQ(*ParseRate("1000"), 1000u);
  EXPECT_EQ(*ParseRate("1000bit"), 1000u);
  EXPECT_EQ(*ParseRate("10kbit"), 10000u);
  EXPECT_EQ(*ParseRate("10Mbit"), 10000000u);
  EXPECT_EQ(*ParseRate("1.5gbit"), 1500000000u);
  EXPECT_EQ(*ParseRate("1mibit"), 1048576u);
  EXPECT_EQ(*ParseRate("1mbps"), 8000000u);  // bytes per second, as in tc
  EXPECT_FALSE(ParseRate("fast").ok());
  EXPECT_FALSE(ParseRate("10furlongs").ok());
  EXPECT_FALSE(ParseRate("0").ok());
}

TEST(ParseBurstTest, TcSizeUnitsToBits) {
  EXPECT_EQ(*ParseBurstBits("1500"), 12000u);  // bytes
  EXPECT_EQ(*ParseBurstBits("64kb"), 64u * 1024 * 8);
  EXPECT_EQ(*ParseBurstBits("1m"), 8u * 1024 * 1024);
  EXPECT_EQ(*ParseBurstBits("512kbit"), 512u * 1024);
}

TEST(ParseBandwidthTest, BothDirectionsAndDefaults) {
  auto bw = ParseBandwidth("ingress=10mbit,burst=64kb,egress=1mbit");
  ASSERT_TRUE(bw.ok()) << bw.error().msg;
  EXPECT_EQ((*bw)["ingressRate"], 10000000u);
  EXPECT_EQ((*bw)["ingressBurst"], 64u * 1024 * 8);
  EXPECT_EQ((*bw)["egressRate"], 1000000u);
  EXPECT_EQ((*bw)["egressBurst"], 100000u);  // 100 ms of 1 mbit/s
  auto small = ParseBandwidth("egress=8kbit");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)["egressBurst"], 12000u);  // at least one 1500-byte packet
  EXPECT_FALSE(small->contains("ingressRate"));
}

TEST(ParseBandwidthTest, Errors) {
  for (const char* bad :
       {"", "burst=1k", "ingress=1mbit,ingress=2mbit", "up=1mbit", "ingress", "ingress=fast"}) {
    EXPECT_FALSE(ParseBandwidth(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace nodegate::runtime
