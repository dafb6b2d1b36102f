#include "webhook/claims/claims.h"

#include <gtest/gtest.h>

#include "admit/check/pod_facts.h"
#include "admit/testing/builders.h"

namespace nodegate::webhook {
namespace {

using admit::testing::MakePod;
using nlohmann::json;

StoredClaim ClaimOf(const admit::Pod& pod) {
  StoredClaim claim;
  claim.facts = admit::MakePodFacts(pod, admit::FeatureGates(), false);
  claim.expires = WallClock::from_time_t(1800000000);
  claim.by = "webhook-a";
  return claim;
}

TEST(ClaimsTest, RoundTripKeepsWhatThePodHolds) {
  admit::Pod pod =
      MakePod("web")
          .Namespace("shop")
          .Uid("u-1")
          .Node("n1")
          .Priority(1000)
          .Container("c", {{"cpu", "1500m"}, {"memory", "1Gi"}, {"example.com/gpu", "2"}})
          .HostPort("UDP/10.0.0.1/53")
          .Obj();
  pod.owner = admit::OwnerReference{"ReplicaSet", "web-1"};
  const StoredClaim claim = ClaimOf(pod);
  auto back = DecodeClaim(EncodeClaim(claim));
  ASSERT_TRUE(back.ok()) << back.error().msg;
  const admit::PodFacts& a = *claim.facts;
  const admit::PodFacts& b = *back->facts;
  EXPECT_EQ(b.key, "shop/web");
  EXPECT_EQ(b.uid, "u-1");
  EXPECT_EQ(b.Owner(), "ReplicaSet shop/web-1");
  EXPECT_EQ(b.priority, 1000);
  EXPECT_EQ(b.qos, a.qos);
  EXPECT_EQ(b.requests.milli_cpu, 1500);
  EXPECT_EQ(b.requests.memory, int64_t{1} << 30);
  EXPECT_EQ(b.requests.scalar, a.requests.scalar);
  EXPECT_EQ(b.EvictionFrees().milli_cpu, a.EvictionFrees().milli_cpu);
  ASSERT_EQ(b.ports.size(), 1u);
  EXPECT_EQ(b.ports[0].port, a.ports[0].port);
  EXPECT_EQ(b.ports[0].container, "c");
  EXPECT_EQ(back->expires, claim.expires);
  EXPECT_EQ(back->by, "webhook-a");
}

TEST(ClaimsTest, ForeignOrHostileClaimsAreRefused) {
  const json good = EncodeClaim(ClaimOf(MakePod("p").Uid("u").Obj()));
  ASSERT_TRUE(DecodeClaim(good).ok());
  const std::vector<std::pair<std::string, json>> changes = {{"uid", nullptr},
                                                             {"uid", 5},
                                                             {"pod", "no-slash"},
                                                             {"expires", "tomorrow"},
                                                             {"expires", "2026-13-01T00:00:00Z"},
                                                             {"priority", 1e12},
                                                             {"priority", int64_t{1} << 40},
                                                             {"requests", {{"cpu", -1}}},
                                                             {"requests", {{"cpu", "1"}}},
                                                             {"ports", {{{"port", 0}}}},
                                                             {"ports", {{{"port", 70000}}}},
                                                             {"ports", "53"},
                                                             {"static", "yes"},
                                                             {"by", std::string(600, 'x')}};
  for (const auto& [key, value] : changes) {
    json bad = good;
    bad[key] = value;
    EXPECT_FALSE(DecodeClaim(bad).ok()) << key << "=" << value.dump();
  }
  EXPECT_FALSE(DecodeClaim(json::array()).ok());
  size_t unreadable = 0;
  auto list = DecodeClaims("[" + good.dump() + ", 5, {}]", &unreadable);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  EXPECT_EQ(unreadable, 2u);
  EXPECT_FALSE(DecodeClaims("{", &unreadable).ok());
  EXPECT_FALSE(DecodeClaims("{}", &unreadable).ok());
}

TEST(ClaimsTest, LeaseNamesStayValidObjectNames) {
  EXPECT_EQ(LeaseName("node-1.example.com"), "nodegate-claims-node-1.example.com");
  const std::string long_node(250, 'a');
  const std::string name = LeaseName(long_node);
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name.rfind("nodegate-claims-", 0), 0u);
  EXPECT_NE(LeaseName(long_node), LeaseName(long_node + "b"));
}

TEST(ClaimsTest, Times) {
  const auto t = WallClock::from_time_t(1800000000);
  EXPECT_EQ(FormatTime(t), "2027-01-15T08:00:00Z");
  EXPECT_EQ(ParseTime("2027-01-15T08:00:00Z"), t);
  for (const char* bad : {"", "2027-01-15 08:00:00Z", "2027-01-15T08:00:00+01:00",
                          "2027-01-15T25:00:00Z", "2027-01-1xT08:00:00Z"}) {
    EXPECT_FALSE(ParseTime(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace nodegate::webhook
