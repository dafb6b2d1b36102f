// ipMasq's iptables backend on the in-memory tables nat of plugins/portmap/testing/
// fake_nat_tables.h: the rules per family, a half-done ADD taken back by the teardown the
// plugin's rollback runs, the teardown in both modes and past a failing table, GC and CHECK's
// gaps. The nftables backend and the kernel are tests/bridge/'s.
#include "plugins/bridge/masq.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "plugins/portmap/testing/fake_nat_tables.h"

namespace nodegate::bridge {
namespace {

using portmap::IptablesMode;
using portmap::testing::FakeChains;
using portmap::testing::FakeNatTables;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr net::Family kV4 = net::Family::kV4;
constexpr net::Family kV6 = net::Family::kV6;
constexpr IptablesMode kNft = IptablesMode::kNft;
constexpr IptablesMode kLegacy = IptablesMode::kLegacy;

MasqPlan PlanOf(const std::string& id, const std::string& network = "mnet") {
  return BuildMasqPlan(
      network, id, {*net::IpPrefix::Parse("10.22.0.5/16"), *net::IpPrefix::Parse("fd00:22::5/64")});
}

MasqAttachment AttachmentOf(const std::string& id, const std::string& network = "mnet") {
  return {.network = network, .ifname = "eth0", .container_id = id};
}

int Count(const std::string& dump, const std::string& needle) {
  int n = 0;
  for (size_t at = dump.find(needle); at != std::string::npos; at = dump.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(IptablesMasq, SetupWritesTheReferenceRulesOnceAndCheckFindsThem) {
  FakeNatTables tables;
  const MasqPlan plan = PlanOf("ctr1");
  ASSERT_TRUE(SetupIptablesMasq(tables, plan).ok());
  const std::string comment = "-m comment --comment \"name: \\\"mnet\\\" id: \\\"ctr1\\\"\"";
  EXPECT_EQ(tables.Dump(kV4), "-N " + plan.chain + "\n" + "-A " + plan.chain + " -d 10.22.0.0/16 " +
                                  comment + " -j ACCEPT\n" + "-A " + plan.chain +
                                  " ! -d 224.0.0.0/4 " + comment + " -j MASQUERADE\n" +
                                  "-A POSTROUTING -s 10.22.0.5/32 " + comment + " -j " +
                                  plan.chain + "\n");
  EXPECT_THAT(tables.Dump(kV6), HasSubstr(" ! -d ff00::/8 " + comment + " -j MASQUERADE\n"));
  EXPECT_TRUE(CheckIptablesMasq(tables, plan).ok());
  // AppendUnique: a second ADD finds everything and commits nothing.
  ASSERT_TRUE(SetupIptablesMasq(tables, plan).ok());
  EXPECT_EQ(tables.commits(kV4), 1);
  EXPECT_EQ(tables.commits(kV6), 1);
}

// IPv4 committed, IPv6 failed: the ADD fails naming IPv6, and the teardown the plugin's
// rollback runs (TeardownMasq) leaves neither family anything.
TEST(IptablesMasq, HalfDoneSetupIsTakenBackByTheTeardown) {
  FakeNatTables tables;
  tables.FailOperation(FakeNatTables::kCommit, kV6);
  const Status add = SetupIptablesMasq(tables, PlanOf("ctr1"));
  ASSERT_FALSE(add.ok());
  EXPECT_THAT(add.error().msg, HasSubstr("ipMasq (IPv6, iptables nft)"));
  ASSERT_EQ(Count(tables.Dump(kV4), "-N CNI-"), 1);
  EXPECT_TRUE(TeardownIptablesMasq(tables, AttachmentOf("ctr1")).empty());
  EXPECT_EQ(tables.Dump(kV4), "");
  EXPECT_EQ(tables.Dump(kV6), "");
}

TEST(IptablesMasq, TeardownIsIdempotentAndCoversBothModes) {
  FakeNatTables tables;
  tables.SetNodeMode(kLegacy);
  ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf("ctr1")).ok());
  tables.SetNodeMode(kNft);  // the node switched to iptables-nft
  ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf("ctr1")).ok());
  ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf("keep")).ok());

  EXPECT_TRUE(TeardownIptablesMasq(tables, AttachmentOf("ctr1")).empty());
  for (const auto family : {kV4, kV6}) {
    EXPECT_EQ(tables.Dump(family, kLegacy), "") << "IPv" << (family == kV4 ? 4 : 6);
    EXPECT_EQ(Count(tables.Dump(family), "-N CNI-"), 1);
  }
  const int commits = tables.commits(kV4) + tables.commits(kV6) + tables.commits(kV4, kLegacy) +
                      tables.commits(kV6, kLegacy);
  EXPECT_TRUE(TeardownIptablesMasq(tables, AttachmentOf("ctr1")).empty());
  EXPECT_EQ(tables.commits(kV4) + tables.commits(kV6) + tables.commits(kV4, kLegacy) +
                tables.commits(kV6, kLegacy),
            commits);
  // keep's three rules (ACCEPT, MASQUERADE, the jump) are all that is left.
  EXPECT_EQ(Count(tables.Dump(kV4), "-A "), 3) << tables.Dump(kV4);
  EXPECT_EQ(Count(tables.Dump(kV4), "id: \\\"keep\\\""), 3) << tables.Dump(kV4);
}

TEST(IptablesMasq, TeardownGoesOnPastAFailingTable) {
  FakeNatTables tables;
  ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf("ctr1")).ok());
  tables.FailOperation(FakeNatTables::kCommit, kV4);
  const std::vector<std::string> errors = TeardownIptablesMasq(tables, AttachmentOf("ctr1"));
  EXPECT_THAT(errors, ElementsAre(HasSubstr("iptables-nft: commit table nat")));
  EXPECT_EQ(Count(tables.Dump(kV4), "-N CNI-"), 1);
  EXPECT_EQ(tables.Dump(kV6), "");
}

// GC removes its network's chains whose container is gone, never another network's.
TEST(IptablesMasq, GcRemovesOnlyStaleChainsOfItsNetwork) {
  FakeNatTables tables;
  for (const char* id : {"valid", "stale"}) {
    ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf(id)).ok());
  }
  ASSERT_TRUE(SetupIptablesMasq(tables, PlanOf("stale", "other-net")).ok());
  EXPECT_TRUE(GcIptablesMasq(tables, "mnet", {"valid"}).empty());
  for (const auto family : {kV4, kV6}) {
    const std::string dump = tables.Dump(family);
    EXPECT_EQ(Count(dump, "-N " + PlanOf("valid").chain), 1) << dump;
    EXPECT_EQ(Count(dump, "-N " + PlanOf("stale").chain), 0) << dump;
    EXPECT_EQ(Count(dump, "-N " + PlanOf("stale", "other-net").chain), 1) << dump;
    EXPECT_EQ(Count(dump, "-A POSTROUTING "), 2) << dump;
  }
}

TEST(IptablesMasq, CheckNamesTheFirstGap) {
  struct Case {
    std::string name;
    std::function<void(FakeChains&, const std::string& chain)> remove;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"chain",
       [](FakeChains& c, const std::string& chain) {
         c["POSTROUTING"].clear();
         c.erase(chain);
       },
       "iptables-nft table nat: chain CNI-"},
      {"accept rule",
       [](FakeChains& c, const std::string& chain) { c[chain].erase(c[chain].begin()); },
       "-d 10.22.0.0/16 -m comment"},
      {"jump", [](FakeChains& c, const std::string&) { c["POSTROUTING"].clear(); },
       "rule \"-A POSTROUTING -s 10.22.0.5/32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeNatTables tables;
    const MasqPlan plan = PlanOf("ctr1");
    ASSERT_TRUE(SetupIptablesMasq(tables, plan).ok());
    c.remove(tables.Chains(kV4), plan.chain);
    const Status check = CheckIptablesMasq(tables, plan);
    ASSERT_FALSE(check.ok());
    EXPECT_EQ(check.error().code, kErrCheckFailed);
    EXPECT_THAT(check.error().msg, HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace nodegate::bridge
