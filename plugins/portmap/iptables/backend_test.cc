// The iptables backend's verbs on the in-memory tables nat of testing/fake_nat_tables.h: the
// rollback of a half-done ADD, refusals, runs again after a concurrent writer, DEL's
// idempotence and its cleanup of the other mode, GC and CHECK's gaps. The same layout on the
// kernel, with the iptables tools reading it back, is tests/portmap/iptables_netns_test.cc's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "plugins/portmap/port_mapper.h"
#include "plugins/portmap/testing/config_text.h"
#include "plugins/portmap/testing/fake_nat_tables.h"

namespace nodegate::portmap {
namespace {

using testing::FakeChains;
using testing::FakeNatTables;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr net::Family kV4 = net::Family::kV4;
constexpr net::Family kV6 = net::Family::kV6;
constexpr IptablesMode kNft = IptablesMode::kNft;
constexpr IptablesMode kLegacy = IptablesMode::kLegacy;

// The chain of container `id` on network "rnet" (ConfText's).
std::string ChainOf(const std::string& id) { return ipt::ContainerChainName("rnet", id); }

// ConfText(extra) parsed for container `id`, as the plugin parses it for ADD.
Config Parsed(const std::string& extra = "", const std::string& id = "ctr1",
              const std::string& mappings = testing::kMappings) {
  auto config = testing::Parse(testing::ConfText(extra, mappings), Purpose::kAdd, id);
  EXPECT_TRUE(config.ok()) << config.error().msg;
  return *config;
}

int Count(const std::string& dump, const std::string& needle) {
  int n = 0;
  for (size_t at = dump.find(needle); at != std::string::npos; at = dump.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

class IptablesBackend : public ::testing::Test {
 protected:
  FakeNatTables tables_;
  std::unique_ptr<PortMapper> mapper_ = MakeIptablesMapper(std::nullopt, tables_);
};

TEST_F(IptablesBackend, ForwardInstallsTheLayoutInBothFamiliesAndCheckFindsIt) {
  const Config config = Parsed();
  ASSERT_TRUE(mapper_->Forward(config).ok());
  for (const auto family : {kV4, kV6}) {
    const std::string dump = tables_.Dump(family);
    EXPECT_EQ(Count(dump, "-N " + ChainOf("ctr1")), 1) << dump;
    EXPECT_EQ(Count(dump, "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"), 1)
        << dump;
    EXPECT_EQ(Count(dump, "-A POSTROUTING -m comment"), 1) << dump;
    EXPECT_EQ(tables_.commits(family), 1);
  }
  EXPECT_THAT(tables_.Dump(kV4), HasSubstr("-j DNAT --to-destination 10.88.0.2:80"));
  EXPECT_THAT(tables_.Dump(kV6), HasSubstr("-j DNAT --to-destination [fd00:88::2]:53"));
  EXPECT_TRUE(mapper_->Check(config).ok());
}

// IPv4 commits, then IPv6 fails: the IPv4 rules are taken back and the error names IPv6's
// table (iptables_netns_test.cc's FailureHalfWayLeavesNoRule on the kernel).
TEST_F(IptablesBackend, IPv6FailingRollsIPv4Back) {
  struct Case {
    std::string name;
    std::string extra;
    std::function<void(FakeNatTables&)> arrange;
  };
  const std::vector<Case> cases = {
      {"mark chain only in IPv4", R"(,"externalSetMarkChain":"EXT-MARK")",
       [](FakeNatTables& t) { t.Chains(kV4)["EXT-MARK"]; }},
      {"IPv6 commit fails", "",
       [](FakeNatTables& t) { t.FailOperation(FakeNatTables::kCommit, kV6); }},
      {"IPv6's third append fails", "",
       [](FakeNatTables& t) { t.FailOperation(FakeNatTables::kAppend, kV6, 3); }},
      {"IPv6 table does not answer", "", [](FakeNatTables& t) { t.SetUsable(kV6, kNft, false); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeNatTables tables;
    auto mapper = MakeIptablesMapper(std::nullopt, tables);
    c.arrange(tables);
    const Status add = mapper->Forward(Parsed(c.extra));
    ASSERT_FALSE(add.ok());
    EXPECT_EQ(add.error().code, kErrKernel);
    EXPECT_THAT(add.error().msg, HasSubstr("ip6tables-nft"));
    // IPv4 did commit once before it was taken back.
    EXPECT_EQ(tables.commits(kV4), 2);
    EXPECT_EQ(Count(tables.Dump(kV4), "CNI-DN-"), 0) << tables.Dump(kV4);
    EXPECT_EQ(Count(tables.Dump(kV6), "CNI-DN-"), 0) << tables.Dump(kV6);
  }
}

// A jump to a mark chain that exists in neither family: refused, nothing changes anywhere.
TEST_F(IptablesBackend, MissingExternalMarkChainIsRefusedAndChangesNothing) {
  ASSERT_TRUE(mapper_->Forward(Parsed("", "keep")).ok());
  const std::string v4 = tables_.Dump(kV4), v6 = tables_.Dump(kV6);
  const Status add = mapper_->Forward(Parsed(R"(,"externalSetMarkChain":"EXT-MARK")"));
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.error().code, kErrKernel);
  EXPECT_THAT(add.error().msg, HasSubstr("missing chain EXT-MARK"));
  EXPECT_EQ(tables_.Dump(kV4), v4);
  EXPECT_EQ(tables_.Dump(kV6), v6);
}

// Another writer commits between the backend's read and its commit: the change runs again on
// what is there now, and the result holds both writers' rules, each shared object once.
TEST_F(IptablesBackend, ConcurrentWriterMakesTheChangeRunAgain) {
  // The other writer is a second plugin adding container "other" at the same moment.
  FakeNatTables other_tables;
  ASSERT_TRUE(MakeIptablesMapper(std::nullopt, other_tables)->Forward(Parsed("", "other")).ok());
  const FakeChains& other_v4 = other_tables.Chains(kV4);
  tables_.ConcurrentWrite(kV4, kNft, [&](FakeChains& chains) { chains = other_v4; });

  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  EXPECT_EQ(tables_.attempts(kV4), 2);
  const std::string dump = tables_.Dump(kV4);
  EXPECT_EQ(Count(dump, "-N CNI-HOSTPORT-DNAT"), 1) << dump;
  EXPECT_EQ(Count(dump, "-A PREROUTING "), 1) << dump;
  EXPECT_EQ(Count(dump, "-A CNI-HOSTPORT-SETMARK "), 1) << dump;
  EXPECT_EQ(Count(dump, "-N " + ChainOf("ctr1")), 1) << dump;
  EXPECT_EQ(Count(dump, "-N " + ChainOf("other")), 1) << dump;
  EXPECT_TRUE(mapper_->Check(Parsed()).ok());
}

// A writer that keeps racing: after the writers' bound the ADD fails, and the family that had
// committed is taken back.
TEST_F(IptablesBackend, EndlessConcurrentWritesFailTheAddWithoutLeftovers) {
  tables_.ConcurrentWrite(
      kV6, kNft, [](FakeChains& chains) { chains["SOMEONE-ELSE"]; }, FakeNatTables::kAttempts);
  const Status add = mapper_->Forward(Parsed());
  ASSERT_FALSE(add.ok());
  EXPECT_THAT(add.error().msg, HasSubstr("changed during the transaction"));
  EXPECT_EQ(tables_.attempts(kV6), FakeNatTables::kAttempts);
  EXPECT_EQ(Count(tables_.Dump(kV4), "CNI-DN-"), 0) << tables_.Dump(kV4);
  EXPECT_EQ(tables_.Dump(kV6), "-N SOMEONE-ELSE\n");
}

TEST_F(IptablesBackend, ReAddReplacesTheContainersRules) {
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  const Config second =
      Parsed("", "ctr1", R"([{"hostPort":9999,"containerPort":99,"protocol":"tcp"}])");
  ASSERT_TRUE(mapper_->Forward(second).ok());
  const std::string dump = tables_.Dump(kV4);
  EXPECT_EQ(Count(dump, "8080"), 0) << dump;
  EXPECT_EQ(Count(dump, "--dport 9999 -j DNAT"), 1) << dump;
  EXPECT_EQ(Count(dump, "-A CNI-HOSTPORT-DNAT "), 1) << dump;
  EXPECT_TRUE(mapper_->Check(second).ok());
  EXPECT_FALSE(mapper_->Check(Parsed()).ok());
}

TEST_F(IptablesBackend, UnforwardIsIdempotentAndCommitsOnlyWhatItRemoves) {
  ASSERT_TRUE(mapper_->Forward(Parsed("", "keep")).ok());
  const std::string v4 = tables_.Dump(kV4), v6 = tables_.Dump(kV6);
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  ASSERT_TRUE(mapper_->Unforward(Parsed()).ok());
  EXPECT_EQ(tables_.Dump(kV4), v4);
  EXPECT_EQ(tables_.Dump(kV6), v6);
  const int commits = tables_.commits(kV4) + tables_.commits(kV6);
  ASSERT_TRUE(mapper_->Unforward(Parsed()).ok());
  ASSERT_TRUE(mapper_->Unforward(Parsed("", "never-added")).ok());
  EXPECT_EQ(tables_.commits(kV4) + tables_.commits(kV6), commits);
  EXPECT_EQ(tables_.Dump(kV4), v4);
}

// A node that switched from iptables-legacy to iptables-nft: DEL removes the container's rules
// from the old mode's loaded tables too.
TEST_F(IptablesBackend, UnforwardAlsoRemovesTheOtherModesRules) {
  auto legacy = MakeIptablesMapper(kLegacy, tables_);
  ASSERT_TRUE(legacy->Forward(Parsed()).ok());
  ASSERT_EQ(Count(tables_.Dump(kV4, kLegacy), "-N " + ChainOf("ctr1")), 1);
  ASSERT_TRUE(mapper_->Unforward(Parsed()).ok());  // the node's mode: nft
  for (const auto family : {kV4, kV6}) {
    EXPECT_EQ(Count(tables_.Dump(family, kLegacy), "CNI-DN-"), 0) << tables_.Dump(family, kLegacy);
  }
}

TEST_F(IptablesBackend, UnforwardNeedsTableNatInOneFamily) {
  tables_.SetUsable(kV6, kNft, false);
  EXPECT_TRUE(mapper_->Unforward(Parsed()).ok());
  tables_.SetUsable(kV4, kNft, false);
  const Status del = MakeIptablesMapper(std::nullopt, tables_)->Unforward(Parsed());
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, kErrKernel);
  EXPECT_THAT(del.error().msg, HasSubstr("neither family"));
}

// GC keeps the valid containers of its network and every other network's, in both modes.
TEST_F(IptablesBackend, GcRemovesOnlyStaleContainersOfItsNetwork) {
  auto legacy = MakeIptablesMapper(kLegacy, tables_);
  ASSERT_TRUE(mapper_->Forward(Parsed("", "valid")).ok());
  ASSERT_TRUE(mapper_->Forward(Parsed("", "stale")).ok());
  ASSERT_TRUE(legacy->Forward(Parsed("", "stale-legacy")).ok());
  Config elsewhere = Parsed("", "stale");
  elsewhere.network_name = "other-net";
  ASSERT_TRUE(mapper_->Forward(elsewhere).ok());

  ASSERT_TRUE(mapper_->Gc("rnet", {"valid"}).ok());
  for (const auto family : {kV4, kV6}) {
    const std::string nft = tables_.Dump(family), old = tables_.Dump(family, kLegacy);
    EXPECT_EQ(Count(nft, "-N " + ChainOf("valid")), 1) << nft;
    EXPECT_EQ(Count(nft, "-N " + ChainOf("stale")), 0) << nft;
    EXPECT_EQ(Count(nft, "-N " + ipt::ContainerChainName("other-net", "stale")), 1) << nft;
    // Two entry rules (tcp, udp) for each of the two containers left.
    EXPECT_EQ(Count(nft, "-A CNI-HOSTPORT-DNAT "), 4) << nft;
    EXPECT_EQ(Count(old, "CNI-DN-"), 0) << old;
  }
}

// A table that fails does not stop GC in the others; the error names it.
TEST_F(IptablesBackend, GcKeepsGoingPastAFailingTable) {
  ASSERT_TRUE(mapper_->Forward(Parsed("", "stale")).ok());
  tables_.FailOperation(FakeNatTables::kCommit, kV4);
  const Status gc = mapper_->Gc("rnet", {});
  ASSERT_FALSE(gc.ok());
  EXPECT_THAT(gc.error().msg, HasSubstr("iptables-nft: commit table nat"));
  EXPECT_THAT(gc.error().msg, Not(HasSubstr("ip6tables")));
  EXPECT_EQ(Count(tables_.Dump(kV4), "-N " + ChainOf("stale")), 1);
  EXPECT_EQ(Count(tables_.Dump(kV6), "CNI-DN-"), 0) << tables_.Dump(kV6);
}

// CHECK names the first object missing, with code 103; each case takes one away after ADD.
TEST_F(IptablesBackend, CheckNamesTheFirstGap) {
  struct Case {
    std::string name;
    std::function<void(FakeChains&)> remove;
    std::string message;
  };
  const std::string chain = ChainOf("ctr1");
  const std::vector<Case> cases = {
      {"shared chain", [](FakeChains& c) { c.erase("CNI-HOSTPORT-MASQ"); },
       "iptables-nft table nat: chain CNI-HOSTPORT-MASQ not found"},
      {"shared rule", [](FakeChains& c) { c["OUTPUT"].clear(); },
       "rule \"-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\" not found"},
      {"container chain", [&](FakeChains& c) { c.erase(chain); }, "chain " + chain + " not found"},
      {"container rule", [&](FakeChains& c) { c[chain].pop_back(); },
       "rule \"-A " + chain + " -p udp -m udp --dport 5353 -j DNAT --to-destination " +
           "10.88.0.2:53\" not found"},
      {"entry rule", [](FakeChains& c) { c["CNI-HOSTPORT-DNAT"].clear(); },
       "rule \"-A CNI-HOSTPORT-DNAT -p tcp -m comment"},
  };
  const Config config = Parsed();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeNatTables tables;
    auto mapper = MakeIptablesMapper(std::nullopt, tables);
    ASSERT_TRUE(mapper->Forward(config).ok());
    ASSERT_TRUE(mapper->Check(config).ok());
    c.remove(tables.Chains(kV4));
    const Status check = mapper->Check(config);
    ASSERT_FALSE(check.ok());
    EXPECT_EQ(check.error().code, kErrCheckFailed);
    EXPECT_THAT(check.error().msg, HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace nodegate::portmap
