// ipMasq's iptables backend on the in-memory tables nat of plugins/portmap/testing/
// fake_nat_tables.h: the rules per family, a half-done ADD taken back by the teardown the
// plugin's rollback runs, the teardown in both modes and past a failing table, GC and CHECK's
// gaps. Its nftables backend on the in-memory ruleset of lib/netfilter/testing/fake_ruleset.h:
// setup, check, teardown and GC, the batch read again after another writer's commit, and a
// refused batch that applies nothing. Both on the kernel are tests/bridge/'s.
#include "plugins/bridge/masq.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/testing/fake_ruleset.h"
#include "plugins/portmap/testing/fake_nat_tables.h"

namespace nodegate::bridge {
namespace {

using netfilter::testing::FakeRuleset;
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

// ---- nftables

constexpr uint8_t kInet = netfilter::kNfprotoInet;

// The comments of masq_checks' rules, in order; empty when the chain is missing.
std::vector<std::string> MasqCheckComments(const FakeRuleset& ruleset) {
  std::vector<std::string> out;
  if (const auto* chain = ruleset.FindChain(kInet, kMasqTable, kMasqChecksChain)) {
    for (const auto& rule : chain->rules) out.push_back(netfilter::UserDataComment(rule.userdata));
  }
  return out;
}

size_t PostroutingRules(const FakeRuleset& ruleset) {
  const auto* chain = ruleset.FindChain(kInet, kMasqTable, kMasqPostroutingChain);
  return chain == nullptr ? 0 : chain->rules.size();
}

TEST(NftMasq, SetupWritesTheTableOnceAndCheckFindsIt) {
  FakeRuleset ruleset;
  const MasqAttachment a = AttachmentOf("ctr1");
  const Status setup = SetupNftMasq(ruleset, a, PlanOf("ctr1"));
  ASSERT_TRUE(setup.ok()) << setup.error().msg;
  const std::string comment = NftMasqComment(a);
  // One rule per address (IPv4 and IPv6), and postrouting's three.
  EXPECT_THAT(MasqCheckComments(ruleset), ElementsAre(comment, comment)) << ruleset.Dump();
  EXPECT_EQ(PostroutingRules(ruleset), 3u);
  EXPECT_THAT(ruleset.Dump(), HasSubstr("chain postrouting hook 4 priority 100 type nat"));
  EXPECT_TRUE(CheckNftMasq(ruleset, a, PlanOf("ctr1")).ok());
  // Again (a re-ADD): the attachment's rules are replaced, postrouting is left alone.
  ASSERT_TRUE(SetupNftMasq(ruleset, a, PlanOf("ctr1")).ok());
  EXPECT_THAT(MasqCheckComments(ruleset), ElementsAre(comment, comment)) << ruleset.Dump();
  EXPECT_EQ(PostroutingRules(ruleset), 3u);
  EXPECT_EQ(ruleset.commits(), 2);
}

TEST(NftMasq, CheckNamesTheMissingRule) {
  FakeRuleset ruleset;
  ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("ctr1"), PlanOf("ctr1")).ok());
  auto& chains = ruleset.tables().at({kInet, kMasqTable}).chains;
  for (auto& chain : chains) {
    if (chain.name == kMasqChecksChain) chain.rules.pop_back();  // IPv6's
  }
  const Status check = CheckNftMasq(ruleset, AttachmentOf("ctr1"), PlanOf("ctr1"));
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.error().code, kErrCheckFailed);
  EXPECT_THAT(check.error().msg, HasSubstr("no masquerade rule for fd00:22::5/64"));
}

// Teardown removes the attachment's rules only; a second one, or one without the table,
// commits nothing.
TEST(NftMasq, TeardownIsIdempotentAndKeepsOthers) {
  FakeRuleset ruleset;
  EXPECT_TRUE(TeardownNftMasq(ruleset, AttachmentOf("ctr1")).ok());
  EXPECT_EQ(ruleset.commit_calls(), 0);
  ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("keep"), PlanOf("keep")).ok());
  const std::string before = ruleset.Dump();
  ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("ctr1"), PlanOf("ctr1")).ok());
  ASSERT_TRUE(TeardownNftMasq(ruleset, AttachmentOf("ctr1")).ok());
  EXPECT_EQ(ruleset.Dump(), before);
  const int calls = ruleset.commit_calls();
  EXPECT_TRUE(TeardownNftMasq(ruleset, AttachmentOf("ctr1")).ok());
  EXPECT_EQ(ruleset.commit_calls(), calls);
  EXPECT_EQ(ruleset.Dump(), before);
}

// GC removes its network's rules whose attachment is not valid, never another network's.
TEST(NftMasq, GcRemovesOnlyStaleRulesOfItsNetwork) {
  FakeRuleset ruleset;
  for (const char* id : {"valid", "stale"}) {
    ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf(id), PlanOf(id)).ok());
  }
  ASSERT_TRUE(
      SetupNftMasq(ruleset, AttachmentOf("stale", "other-net"), PlanOf("stale", "other-net")).ok());
  const Status gc = GcNftMasq(ruleset, "mnet", {{.container_id = "valid", .ifname = "eth0"}});
  ASSERT_TRUE(gc.ok()) << gc.error().msg;
  const std::string valid = NftMasqComment(AttachmentOf("valid"));
  const std::string elsewhere = NftMasqComment(AttachmentOf("stale", "other-net"));
  EXPECT_THAT(MasqCheckComments(ruleset), ElementsAre(valid, valid, elsewhere, elsewhere));
  // Nothing left to collect: no commit.
  const int commits = ruleset.commits();
  ASSERT_TRUE(GcNftMasq(ruleset, "mnet", {{.container_id = "valid", .ifname = "eth0"}}).ok());
  EXPECT_EQ(ruleset.commits(), commits);
}

// Another writer (a second attachment's setup) commits between the read and the commit: the
// batch is refused whole, built again on what is there now, and applied once.
TEST(NftMasq, StaleGenerationIsReadAgainAndAppliedOnce) {
  FakeRuleset ruleset;
  ruleset.ConcurrentWrite([](FakeRuleset& r) {
    ASSERT_TRUE(SetupNftMasq(r, AttachmentOf("other"), PlanOf("other")).ok());
  });
  const Status setup = SetupNftMasq(ruleset, AttachmentOf("ctr1"), PlanOf("ctr1"));
  ASSERT_TRUE(setup.ok()) << setup.error().msg;
  EXPECT_EQ(ruleset.commit_calls(), 3);  // ours stale, the other's, ours again
  EXPECT_EQ(ruleset.commits(), 2);
  const std::string ours = NftMasqComment(AttachmentOf("ctr1"));
  const std::string other = NftMasqComment(AttachmentOf("other"));
  EXPECT_THAT(MasqCheckComments(ruleset), ElementsAre(other, other, ours, ours));
  EXPECT_EQ(PostroutingRules(ruleset), 3u);
}

TEST(NftMasq, EndlessStaleGenerationsFailWithNothingApplied) {
  FakeRuleset ruleset;
  ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("keep"), PlanOf("keep")).ok());
  const std::string before = ruleset.Dump();
  constexpr int kMany = 1000;
  ruleset.ConcurrentWrite([](FakeRuleset&) {}, kMany);
  for (const auto& verb : std::vector<std::function<Status()>>{
           [&] { return SetupNftMasq(ruleset, AttachmentOf("ctr1"), PlanOf("ctr1")); },
           [&] { return TeardownNftMasq(ruleset, AttachmentOf("keep")); },
           [&] { return GcNftMasq(ruleset, "mnet", {}); }}) {
    const int calls = ruleset.commit_calls();
    const Status s = verb();
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(netfilter::IsStaleGeneration(s.error())) << s.error().msg;
    EXPECT_THAT(s.error().msg, HasSubstr(kMasqTable));
    EXPECT_GT(ruleset.commit_calls() - calls, 1);
    EXPECT_EQ(ruleset.Dump(), before);
  }
  EXPECT_LT(ruleset.commit_calls(), kMany);
}

// A batch the kernel refuses (any change of it) applies nothing: the error names the refusal.
TEST(NftMasq, RefusedBatchAppliesNothing) {
  struct Case {
    std::string name;
    std::function<Status(FakeRuleset&)> verb;
  };
  const std::vector<Case> cases = {
      {"setup",
       [](FakeRuleset& r) { return SetupNftMasq(r, AttachmentOf("ctr1"), PlanOf("ctr1")); }},
      {"teardown", [](FakeRuleset& r) { return TeardownNftMasq(r, AttachmentOf("keep")); }},
      {"gc", [](FakeRuleset& r) { return GcNftMasq(r, "mnet", {}); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRuleset ruleset;
    ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("keep"), PlanOf("keep")).ok());
    const std::string before = ruleset.Dump();
    ruleset.RefuseCommit(EPERM);
    const Status s = c.verb(ruleset);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, kErrKernel);
    EXPECT_THAT(s.error().msg, HasSubstr("refused: Operation not permitted"));
    EXPECT_EQ(ruleset.Dump(), before);
  }
}

// A read that fails fails the verb before any commit, whichever read it is.
TEST(NftMasq, FailingReadFailsTheVerb) {
  struct Case {
    std::string name;
    std::string operation;
    int nth;
    std::function<Status(FakeRuleset&)> verb;
  };
  const auto setup = [](FakeRuleset& r) {
    return SetupNftMasq(r, AttachmentOf("ctr1"), PlanOf("ctr1"));
  };
  const auto teardown = [](FakeRuleset& r) { return TeardownNftMasq(r, AttachmentOf("keep")); };
  const std::vector<Case> cases = {
      {"setup: the generation", FakeRuleset::kGeneration, 1, setup},
      {"setup: postrouting's rules", FakeRuleset::kRules, 1, setup},
      {"setup: the attachment's rules", FakeRuleset::kRules, 2, setup},
      {"teardown: the table", FakeRuleset::kHasTables, 1, teardown},
      {"teardown: the attachment's rules", FakeRuleset::kRules, 1, teardown},
      {"gc: the network's rules", FakeRuleset::kRules, 1,
       [](FakeRuleset& r) { return GcNftMasq(r, "mnet", {}); }},
      {"check: the attachment's rules", FakeRuleset::kRules, 1,
       [](FakeRuleset& r) { return CheckNftMasq(r, AttachmentOf("keep"), PlanOf("keep")); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRuleset ruleset;
    ASSERT_TRUE(SetupNftMasq(ruleset, AttachmentOf("keep"), PlanOf("keep")).ok());
    const std::string before = ruleset.Dump();
    const int calls = ruleset.commit_calls();
    ruleset.FailOperation(c.operation, c.nth);
    const Status s = c.verb(ruleset);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, kErrKernel);
    EXPECT_THAT(s.error().msg, HasSubstr("injected fault"));
    EXPECT_EQ(ruleset.commit_calls(), calls);
    EXPECT_EQ(ruleset.Dump(), before);
  }
}

}  // namespace
}  // namespace nodegate::bridge
