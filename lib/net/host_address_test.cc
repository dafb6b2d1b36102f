// HostAddressesOverlap: the two senses of "every address" side by side.
#include "lib/net/host_address.h"

#include <gtest/gtest.h>

#include <string_view>

namespace nodegate::net {
namespace {

HostAddress At(std::string_view text) {
  const auto ip = IpAddress::Parse(text);
  EXPECT_TRUE(ip) << text;
  return {ip->family(), ip};
}

constexpr auto kOwn = WildcardReach::kOwnFamily;
constexpr auto kEvery = WildcardReach::kEveryFamily;

TEST(HostAddressesOverlap, SpecificAddressesCollideOnlyWhenEqual) {
  for (const auto reach : {kOwn, kEvery}) {
    EXPECT_TRUE(HostAddressesOverlap(At("10.0.0.1"), At("10.0.0.1"), reach));
    EXPECT_FALSE(HostAddressesOverlap(At("10.0.0.1"), At("10.0.0.2"), reach));
    EXPECT_TRUE(HostAddressesOverlap(At("fd00::1"), At("fd00:0::1"), reach));
    EXPECT_FALSE(HostAddressesOverlap(At("10.0.0.1"), At("::ffff:10.0.0.1"), reach));
  }
}

TEST(HostAddressesOverlap, EveryAddressOfOneFamily) {
  const HostAddress any4{Family::kV4, std::nullopt};
  const HostAddress any6{Family::kV6, std::nullopt};
  for (const auto reach : {kOwn, kEvery}) {
    EXPECT_TRUE(HostAddressesOverlap(any4, At("10.0.0.1"), reach));
    EXPECT_TRUE(HostAddressesOverlap(At("10.0.0.1"), any4, reach));
    EXPECT_TRUE(HostAddressesOverlap(At("0.0.0.0"), At("10.0.0.1"), reach));
    EXPECT_TRUE(HostAddressesOverlap(any6, At("::"), reach));
  }
  // A DNAT rule matches one family: every IPv4 address leaves IPv6 free, and the reverse.
  EXPECT_FALSE(HostAddressesOverlap(any4, At("fd00::1"), kOwn));
  EXPECT_FALSE(HostAddressesOverlap(At("::"), At("10.0.0.1"), kOwn));
  EXPECT_FALSE(HostAddressesOverlap(any4, any6, kOwn));
  // A dual-stack socket on "::" takes IPv4 too; the scheduler's 0.0.0.0 takes every address.
  EXPECT_TRUE(HostAddressesOverlap(any4, At("fd00::1"), kEvery));
  EXPECT_TRUE(HostAddressesOverlap(At("::"), At("10.0.0.1"), kEvery));
  EXPECT_TRUE(HostAddressesOverlap(any4, any6, kEvery));
}

// The text form agrees with HostAddressesOverlap(kEveryFamily) on every pair of canonical texts.
TEST(CanonicalHostIpsOverlap, AgreesWithTheAddressForm) {
  const char* samples[] = {"0.0.0.0", "::", "10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"};
  for (const char* a : samples) {
    for (const char* b : samples) {
      EXPECT_EQ(CanonicalHostIpsOverlap(a, b), HostAddressesOverlap(At(a), At(b), kEvery))
          << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace nodegate::net
