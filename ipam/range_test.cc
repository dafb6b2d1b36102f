// Range canonicalisation (defaults, reference error texts) and the round-robin iteration
// order, IPv4 and IPv6.
#include "ipam/range.h"

#include <gtest/gtest.h>

#include "ipam/allocator.h"
#include "ipam/testing/fake_store.h"

namespace nodegate::ipam {
namespace {

using testing::Ip;

RangeSpec Spec(const char* subnet, const char* start = nullptr, const char* end = nullptr,
               const char* gw = nullptr) {
  RangeSpec s;
  s.subnet = net::IpPrefix::Parse(subnet);
  if (start) s.range_start = Ip(start);
  if (end) s.range_end = Ip(end);
  if (gw) s.gateway = Ip(gw);
  return s;
}

TEST(RangeTest, Ipv4DefaultsSkipNetworkAndBroadcast) {
  auto r = CanonicalizeRange(Spec("10.88.0.0/16"));
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->gateway, Ip("10.88.0.1"));
  EXPECT_EQ(r->range_start, Ip("10.88.0.1"));
  EXPECT_EQ(r->range_end, Ip("10.88.255.254"));
}

TEST(RangeTest, Ipv6DefaultEndIsLastAddress) {
  auto r = CanonicalizeRange(Spec("2001:db8::/120"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gateway, Ip("2001:db8::1"));
  EXPECT_EQ(r->range_start, Ip("2001:db8::1"));
  EXPECT_EQ(r->range_end, Ip("2001:db8::ff"));
}

TEST(RangeTest, MappedAddressesBecomeIpv4) {
  auto r = CanonicalizeRange(Spec("10.1.0.0/24", "::ffff:10.1.0.10"));
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->range_start, Ip("10.1.0.10"));
}

struct BadRange {
  const char* name;
  RangeSpec spec;
  const char* msg;
};

TEST(RangeTest, ReferenceErrorTexts) {
  const BadRange cases[] = {
      {"v4 /31", Spec("10.0.0.0/31"), "Network 10.0.0.0/31 too small to allocate from"},
      {"v4 /32", Spec("10.0.0.1/32"), "Network 10.0.0.1/32 too small to allocate from"},
      {"v6 /127", Spec("2001:db8::/127"), "Network 2001:db8::/127 too small to allocate from"},
      {"host bits", Spec("10.0.0.5/24"),
       "Network has host bits set. For a subnet mask of length 24 the network address is "
       "10.0.0.0"},
      {"start outside", Spec("10.0.0.0/24", "10.0.1.5"),
       "RangeStart 10.0.1.5 not in network 10.0.0.0/24"},
      {"end outside", Spec("10.0.0.0/24", nullptr, "10.0.1.5"),
       "RangeEnd 10.0.1.5 not in network 10.0.0.0/24"},
      {"end before start", Spec("10.0.0.0/24", "10.0.0.50", "10.0.0.40"),
       "RangeEnd 10.0.0.40 not in network 10.0.0.0/24"},
      {"start wrong family", Spec("10.0.0.0/24", "2001:db8::1"),
       "RangeStart 2001:db8::1 not in network 10.0.0.0/24"},
  };
  for (const auto& c : cases) {
    auto r = CanonicalizeRange(c.spec);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.error().code, kErrInvalidConfig) << c.name;
    EXPECT_EQ(r.error().msg, c.msg) << c.name;
  }
}

TEST(RangeSetTest, ChecksFamiliesAndOverlaps) {
  EXPECT_EQ(CanonicalizeRangeSet({}).error().msg, "empty range set");
  EXPECT_EQ(CanonicalizeRangeSet({Spec("10.0.0.0/24"), Spec("2001:db8::/64")}).error().msg,
            "mixed address families");
  EXPECT_EQ(CanonicalizeRangeSet({Spec("10.0.0.0/24"), Spec("10.0.0.0/25")}).error().msg,
            "subnets 10.0.0.1-10.0.0.254 and 10.0.0.1-10.0.0.126 overlap");
  // Same subnet, disjoint slices: fine.
  auto ok = CanonicalizeRangeSet(
      {Spec("10.0.0.0/24", "10.0.0.10", "10.0.0.19"), Spec("10.0.0.0/24", "10.0.0.20")});
  ASSERT_TRUE(ok.ok()) << ok.error().msg;
  EXPECT_EQ(ok->ToString(), "10.0.0.10-10.0.0.19,10.0.0.20-10.0.0.254");
}

TEST(RangeSetTest, Capacity) {
  auto set = CanonicalizeRangeSet({Spec("10.0.0.0/29", "10.0.0.2", "10.0.0.5", "10.0.0.3")});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->Capacity(), 3u);  // .2 .4 .5
  auto big = CanonicalizeRangeSet({Spec("2001:db8::/32")});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->Capacity(), UINT64_MAX);
  auto v4_16 = CanonicalizeRangeSet({Spec("10.1.0.0/16")});
  EXPECT_EQ(v4_16->Capacity(), 65533u);  // .0.1-.255.254 minus the gateway
}

std::vector<std::string> Walk(const RangeSet& set, std::optional<net::IpAddress> last,
                              size_t limit = 100) {
  RangeIterator it(set, last);
  std::vector<std::string> out;
  while (auto c = it.Next()) {
    out.push_back(c->ip.ToString());
    if (out.size() >= limit) break;
  }
  return out;
}

using Order = std::vector<std::string>;

TEST(RangeIteratorTest, FreshStartsAtRangeStartAndSkipsGateway) {
  auto set = CanonicalizeRangeSet({Spec("10.5.0.0/29", "10.5.0.2", "10.5.0.5", "10.5.0.3")});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(Walk(*set, std::nullopt), (Order{"10.5.0.2", "10.5.0.4", "10.5.0.5"}));
}

TEST(RangeIteratorTest, RoundRobinAfterLastReservedTriesItLast) {
  auto set = CanonicalizeRangeSet({Spec("10.5.0.0/29", "10.5.0.2", "10.5.0.5", "10.5.0.3")});
  EXPECT_EQ(Walk(*set, Ip("10.5.0.4")), (Order{"10.5.0.5", "10.5.0.2", "10.5.0.4"}));
  EXPECT_EQ(Walk(*set, Ip("10.5.0.5")), (Order{"10.5.0.2", "10.5.0.4", "10.5.0.5"}));
  // A last address outside the set (the ranges changed): start over.
  EXPECT_EQ(Walk(*set, Ip("10.9.0.1")), (Order{"10.5.0.2", "10.5.0.4", "10.5.0.5"}));
}

TEST(RangeIteratorTest, DefaultGatewayAtRangeStart) {
  auto set = CanonicalizeRangeSet({Spec("192.0.2.0/30")});  // .1 gw, .1-.2
  EXPECT_EQ(Walk(*set, std::nullopt), (Order{"192.0.2.2"}));
}

TEST(RangeIteratorTest, WrapsAcrossRangesAndEndsWhereItStarted) {
  auto set = CanonicalizeRangeSet(
      {Spec("10.0.0.0/29", "10.0.0.2", "10.0.0.3"), Spec("10.0.1.0/29", "10.0.1.2", "10.0.1.3")});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(Walk(*set, Ip("10.0.0.2")), (Order{"10.0.0.3", "10.0.1.2", "10.0.1.3", "10.0.0.2"}));
  // The last address is a range's end: the reference never stops here when all are taken.
  EXPECT_EQ(Walk(*set, Ip("10.0.0.3")), (Order{"10.0.1.2", "10.0.1.3", "10.0.0.2", "10.0.0.3"}));
  EXPECT_EQ(Walk(*set, Ip("10.0.1.3")), (Order{"10.0.0.2", "10.0.0.3", "10.0.1.2", "10.0.1.3"}));
}

TEST(RangeIteratorTest, Ipv6) {
  auto set = CanonicalizeRangeSet({Spec("2001:db8::/126")});  // ::1 gw, ::1-::3
  EXPECT_EQ(Walk(*set, std::nullopt), (Order{"2001:db8::2", "2001:db8::3"}));
  EXPECT_EQ(Walk(*set, Ip("2001:db8::2")), (Order{"2001:db8::3", "2001:db8::2"}));
}

}  // namespace
}  // namespace nodegate::ipam
