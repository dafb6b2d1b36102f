// The nftables backend's verbs on the in-memory ruleset of lib/netfilter/testing/
// fake_ruleset.h: ADD, CHECK and DEL of a container, a host port another container holds
// (refused whole, in either family), the slow ADD read again after another writer's commit,
// GC, DEL's idempotence, and failing reads and commits. The same layout on the kernel, with nft
// reading it back, is tests/portmap/nftables_netns_test.cc's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/testing/fake_ruleset.h"
#include "plugins/portmap/nftables/rules.h"
#include "plugins/portmap/port_mapper.h"
#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using netfilter::testing::FakeRuleset;
using ::testing::HasSubstr;

constexpr uint8_t kInet = netfilter::kNfprotoInet;

// A prevResult (to replace ConfText's) with the container's `addresses` ("10.88.0.3/16").
std::string Prev(const std::vector<std::string>& addresses) {
  std::string ips;
  for (const auto& a : addresses) {
    ips += std::string(ips.empty() ? "" : ",") + R"({"interface":0,"address":")" + a + R"("})";
  }
  return R"(,"prevResult":{"cniVersion":"1.0.0",)"
         R"("interfaces":[{"name":"eth0","sandbox":"/run/netns/y"}],"ips":[)" +
         ips + "]}";
}

// ConfText's config for container `id` (network "rnet"), as the plugin parses it for `purpose`;
// `prev` replaces its prevResult when given.
Config Parsed(const std::string& id = "ctr1", const std::string& prev = "",
              const std::string& mappings = testing::kMappings, Purpose purpose = Purpose::kAdd) {
  const std::string text =
      prev.empty() ? testing::ConfText("", mappings) : testing::ConfText(prev, mappings, false);
  auto config = testing::Parse(text, purpose, id);
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

// The dump's lines sorted: the same objects whatever order a set lists its elements in.
std::string SortedLines(const std::string& dump) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < dump.size();) {
    const size_t end = std::min(dump.find('\n', at), dump.size());
    lines.push_back(dump.substr(at, end - at));
    at = end + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// Lines of the dump that carry `id`'s comment (its map and hairpin elements).
int ElementsOf(const FakeRuleset& ruleset, const std::string& id) {
  return Count(ruleset.Dump(), "\"" + nft::ElementComment(id) + "\"\n");
}

// The owned set's elements (records and markers of every owner).
size_t Owned(const FakeRuleset& ruleset) {
  const auto* set = ruleset.FindSet(kInet, nft::kTable, nft::kOwnedSet);
  return set == nullptr ? 0 : set->elements.size();
}

// Another container of the network (10.88.0.3, fd00:88::3), with host ports of its own.
Config Keep() {
  return Parsed("keep", Prev({"10.88.0.3/16", "fd00:88::3/64"}),
                R"([{"hostPort":9090,"containerPort":90,"protocol":"tcp"}])");
}

class NftablesBackend : public ::testing::Test {
 protected:
  FakeRuleset ruleset_;
  std::unique_ptr<PortMapper> mapper_ = MakeNftablesMapper(ruleset_);
};

// ADD writes the network's chains and the container's elements; CHECK finds them; DEL takes
// the container's away and leaves the ruleset as it was before its ADD.
TEST_F(NftablesBackend, AddCheckDelLeavesNothingOfTheContainer) {
  ASSERT_TRUE(mapper_->Forward(Keep()).ok());
  const std::string before = ruleset_.Dump();
  const size_t owned = Owned(ruleset_);
  ASSERT_GT(ElementsOf(ruleset_, "keep"), 0) << before;

  const Config config = Parsed();
  const Status add = mapper_->Forward(config);
  ASSERT_TRUE(add.ok()) << add.error().msg;
  // tcp 8080 on 10.88.0.1 (IPv4), udp 5353 (both families): three map elements and their
  // hairpin elements.
  EXPECT_GE(ElementsOf(ruleset_, "ctr1"), 3) << ruleset_.Dump();
  EXPECT_GT(Owned(ruleset_), owned);
  const Status check = mapper_->Check(config);
  EXPECT_TRUE(check.ok()) << check.error().msg;

  const Status del = mapper_->Unforward(Parsed("ctr1", "", testing::kMappings, Purpose::kDel));
  ASSERT_TRUE(del.ok()) << del.error().msg;
  EXPECT_EQ(ElementsOf(ruleset_, "ctr1"), 0) << ruleset_.Dump();
  EXPECT_EQ(ruleset_.Dump(), before);
  const Status gone = mapper_->Check(config);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, kErrCheckFailed);
  EXPECT_TRUE(mapper_->Check(Keep()).ok());
}

// A second container's ADD of a host port the first holds: 102, and nothing of it applied.
TEST_F(NftablesBackend, SameHostPortOfAnotherContainerIsRefusedWith102) {
  ASSERT_TRUE(mapper_->Forward(Parsed("first")).ok());
  const std::string before = ruleset_.Dump();
  const int commits = ruleset_.commits();
  // Another address: the same one would map the port to the same place, which the kernel
  // takes as the same element.
  const Status add = mapper_->Forward(Parsed("second", Prev({"10.88.0.3/16", "fd00:88::3/64"})));
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.error().code, kErrAddressInUse);
  EXPECT_THAT(add.error().msg, HasSubstr("already mapped to another container"));
  EXPECT_EQ(ruleset_.Dump(), before);
  EXPECT_EQ(ruleset_.commits(), commits);
  EXPECT_EQ(ElementsOf(ruleset_, "second"), 0);
}

// The same host port, container address and port as another container's (an address reused
// while the first container's mappings are still there): 102 as well, never a silent share of
// the first container's element, which its DEL would take away from the second.
TEST_F(NftablesBackend, SameMappingOfAnotherContainerIsRefusedWith102) {
  ASSERT_TRUE(mapper_->Forward(Parsed("first")).ok());
  const std::string before = ruleset_.Dump();
  const Status add = mapper_->Forward(Parsed("second"));
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.error().code, kErrAddressInUse);
  EXPECT_THAT(add.error().msg, HasSubstr("already mapped to another container"));
  EXPECT_EQ(ruleset_.Dump(), before);
  ASSERT_TRUE(mapper_->Unforward(Parsed("first", "", testing::kMappings, Purpose::kDel)).ok());
  ASSERT_TRUE(mapper_->Forward(Parsed("second")).ok());
  EXPECT_TRUE(mapper_->Check(Parsed("second")).ok());
}

// A re-ADD of the same container with the same mappings replaces its elements (the batch
// deletes them before it creates them again).
TEST_F(NftablesBackend, ReAddOfTheSameMappingsSucceeds) {
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  const std::string first = SortedLines(ruleset_.Dump());
  const Status again = mapper_->Forward(Parsed());
  ASSERT_TRUE(again.ok()) << again.error().msg;
  EXPECT_EQ(SortedLines(ruleset_.Dump()), first);  // a set's elements in any order
  EXPECT_TRUE(mapper_->Check(Parsed()).ok());
}

// Only the IPv6 part of the ADD is taken (another container maps udp 5353 in IPv6 alone): the
// whole ADD is refused, its IPv4 part with it.
TEST_F(NftablesBackend, RefusedIPv6PartLeavesTheIPv4PartUnapplied) {
  const std::string udp = R"([{"hostPort":5353,"containerPort":53,"protocol":"udp"}])";
  ASSERT_TRUE(mapper_->Forward(Parsed("v6only", Prev({"fd00:88::9/64"}), udp)).ok());
  const std::string before = ruleset_.Dump();
  const Status add = mapper_->Forward(Parsed());
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.error().code, kErrAddressInUse);
  EXPECT_THAT(add.error().msg, HasSubstr("udp . 5353"));
  EXPECT_EQ(ruleset_.Dump(), before);
  EXPECT_EQ(ElementsOf(ruleset_, "ctr1"), 0);
}

// The network's first ADD reads the table and commits on the generation it read; another
// writer (a second container's ADD) commits in between: the batch is refused whole, read
// again, and applied once, beside the other writer's.
TEST_F(NftablesBackend, StaleGenerationIsReadAgainAndAppliedOnce) {
  auto other = MakeNftablesMapper(ruleset_);
  const std::string v4 = R"([{"hostPort":7070,"containerPort":70,"protocol":"tcp"}])";
  ruleset_.ConcurrentWrite(
      [&](FakeRuleset&) {
        ASSERT_TRUE(other->Forward(Parsed("other", Prev({"10.88.0.3/16"}), v4)).ok());
      },
      1, FakeRuleset::Commits::kOnGeneration);
  const Status add = mapper_->Forward(Parsed());
  ASSERT_TRUE(add.ok()) << add.error().msg;
  // Ours: the fast batch refused (no table yet), the slow one stale, then applied; the other
  // writer's: its fast batch refused, its slow one applied.
  EXPECT_EQ(ruleset_.commits(), 2);
  EXPECT_EQ(ruleset_.commit_calls(), 5);
  EXPECT_TRUE(mapper_->Check(Parsed()).ok());
  EXPECT_TRUE(mapper_->Check(Parsed("other", Prev({"10.88.0.3/16"}), v4)).ok());
  // One table, one set of the network's chains (CHECK counts their rules).
  EXPECT_EQ(Count(ruleset_.Dump(), "table inet cni_hostport"), 1);
}

// A writer that commits before every try: after the backend's bound the ADD fails as stale,
// and nothing of it is applied.
TEST_F(NftablesBackend, EndlessStaleGenerationsFailTheAddWithNothingApplied) {
  constexpr int kMany = 1000;
  ruleset_.ConcurrentWrite([](FakeRuleset&) {}, kMany, FakeRuleset::Commits::kOnGeneration);
  const Status add = mapper_->Forward(Parsed());
  ASSERT_FALSE(add.ok());
  EXPECT_TRUE(netfilter::IsStaleGeneration(add.error())) << add.error().msg;
  EXPECT_EQ(ruleset_.commits(), 0);
  EXPECT_EQ(ruleset_.Dump(), "");
  EXPECT_GT(ruleset_.commit_calls(), 2);
  EXPECT_LT(ruleset_.commit_calls(), kMany);
}

// GC removes its network's containers that are not valid, never a valid one or another
// network's: the result is what the survivors' ADDs alone make.
TEST_F(NftablesBackend, GcRemovesOnlyInvalidContainersOfItsNetwork) {
  Config elsewhere = Parsed("stale");
  elsewhere.network_name = "other-net";
  const std::string v4 = R"([{"hostPort":7070,"containerPort":70,"protocol":"tcp"}])";
  FakeRuleset expected;
  auto survivors = MakeNftablesMapper(expected);
  ASSERT_TRUE(survivors->Forward(Parsed("valid")).ok());
  ASSERT_TRUE(survivors->Forward(elsewhere).ok());

  ASSERT_TRUE(mapper_->Forward(Parsed("valid")).ok());
  ASSERT_TRUE(mapper_->Forward(Parsed("stale", Prev({"10.88.0.3/16"}), v4)).ok());
  ASSERT_TRUE(mapper_->Forward(elsewhere).ok());
  ASSERT_GT(ElementsOf(ruleset_, "stale"), ElementsOf(expected, "stale"));

  const Status gc = mapper_->Gc("rnet", {"valid"});
  ASSERT_TRUE(gc.ok()) << gc.error().msg;
  EXPECT_EQ(ruleset_.Dump(), expected.Dump());
  EXPECT_TRUE(mapper_->Check(Parsed("valid")).ok());
  EXPECT_TRUE(mapper_->Check(elsewhere).ok());
  // Nothing left to collect: no commit.
  const int commits = ruleset_.commits();
  ASSERT_TRUE(mapper_->Gc("rnet", {"valid"}).ok());
  EXPECT_EQ(ruleset_.commits(), commits);
}

// DEL of a container that has nothing (never added, already deleted) succeeds and commits
// nothing.
TEST_F(NftablesBackend, DelIsIdempotentWhenAbsent) {
  const Config del = Parsed("ctr1", "", testing::kMappings, Purpose::kDel);
  EXPECT_TRUE(mapper_->Unforward(del).ok());
  EXPECT_EQ(ruleset_.commit_calls(), 0);
  EXPECT_EQ(ruleset_.Dump(), "");

  ASSERT_TRUE(mapper_->Forward(Keep()).ok());
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  ASSERT_TRUE(mapper_->Unforward(del).ok());
  const std::string after = ruleset_.Dump();
  const int calls = ruleset_.commit_calls();
  EXPECT_TRUE(mapper_->Unforward(del).ok());
  EXPECT_TRUE(
      mapper_->Unforward(Parsed("never-added", "", testing::kMappings, Purpose::kDel)).ok());
  EXPECT_EQ(ruleset_.commit_calls(), calls);
  EXPECT_EQ(ruleset_.Dump(), after);
}

// Removes the first element commented `id` from a set whose name holds `part`, behind the
// plugin's back; false when there is none.
bool RemoveOneElement(FakeRuleset& ruleset, const std::string& id, const std::string& part) {
  for (auto& set : ruleset.tables().at({kInet, nft::kTable}).sets) {
    if (set.name.find(part) == std::string::npos) continue;
    auto it = std::find_if(set.elements.begin(), set.elements.end(), [&](const auto& e) {
      return netfilter::UserDataComment(e.userdata) == nft::ElementComment(id);
    });
    if (it == set.elements.end()) continue;
    set.elements.erase(it);
    return true;
  }
  return false;
}

// A DEL whose elements are not all there (one went behind the plugin's back): the exact batch
// is refused whole (ENOENT), and the listing path deletes what is left.
TEST_F(NftablesBackend, DelOfPartlyMissingElementsFallsBackToTheListing) {
  ASSERT_TRUE(mapper_->Forward(Keep()).ok());
  const std::string before = ruleset_.Dump();
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  ASSERT_TRUE(RemoveOneElement(ruleset_, "ctr1", "_dnat_any_v6"));
  const Status del = mapper_->Unforward(Parsed("ctr1", "", testing::kMappings, Purpose::kDel));
  ASSERT_TRUE(del.ok()) << del.error().msg;
  EXPECT_EQ(ruleset_.Dump(), before);
}

// DEL's listing path reads, then deletes what it read (no generation: a refusal tells); another
// writer deletes one of those elements in between: the batch is refused (ENOENT), read again,
// and applied.
TEST_F(NftablesBackend, DelListingReadsAgainWhenAnElementGoesMeanwhile) {
  ASSERT_TRUE(mapper_->Forward(Keep()).ok());
  const std::string before = ruleset_.Dump();
  ASSERT_TRUE(mapper_->Forward(Parsed()).ok());
  ASSERT_TRUE(RemoveOneElement(ruleset_, "ctr1", "_dnat_any_v6"));  // the exact DEL fails
  const int calls = ruleset_.commit_calls();
  ruleset_.ConcurrentWrite([](FakeRuleset&) {});  // before the exact DEL's batch: nothing
  ruleset_.ConcurrentWrite(
      [](FakeRuleset& r) { ASSERT_TRUE(RemoveOneElement(r, "ctr1", "_hairpin_")); });
  const Status del = mapper_->Unforward(Parsed("ctr1", "", testing::kMappings, Purpose::kDel));
  ASSERT_TRUE(del.ok()) << del.error().msg;
  EXPECT_EQ(ruleset_.Dump(), before);
  // The exact batch, the listing's refused one, the listing's applied one.
  EXPECT_EQ(ruleset_.commit_calls() - calls, 3);
}

// A read that fails, or a commit the kernel refuses for its own reasons: the verb fails with
// code 100 and the ruleset is as it was.
TEST_F(NftablesBackend, FailingReadsAndCommitsChangeNothing) {
  struct Case {
    std::string name;
    std::function<void(FakeRuleset&)> arrange;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"the network's elements cannot be listed",
       [](FakeRuleset& r) { r.FailOperation(FakeRuleset::kElements); }, "injected fault"},
      {"the generation cannot be read",
       [](FakeRuleset& r) { r.FailOperation(FakeRuleset::kGeneration); }, "injected fault"},
      {"the slow batch is refused", [](FakeRuleset& r) { r.RefuseCommit(ENOMEM, 2); },
       "Cannot allocate memory"},
      {"the exchange breaks", [](FakeRuleset& r) { r.FailOperation(FakeRuleset::kCommit, 2); },
       "injected fault"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRuleset ruleset;
    auto mapper = MakeNftablesMapper(ruleset);
    c.arrange(ruleset);
    const Status add = mapper->Forward(Parsed());
    ASSERT_FALSE(add.ok());
    EXPECT_EQ(add.error().code, kErrKernel);
    EXPECT_THAT(add.error().msg, HasSubstr(c.message));
    EXPECT_EQ(ruleset.Dump(), "");
    EXPECT_EQ(ruleset.commits(), 0);
  }
}

// CHECK names what is missing (code 103): an element taken away, or a chain's rules flushed.
TEST_F(NftablesBackend, CheckNamesTheFirstGap) {
  const Config config = Parsed();
  ASSERT_TRUE(mapper_->Forward(config).ok());
  auto& table = ruleset_.tables().at({kInet, nft::kTable});
  for (auto& set : table.sets) {
    if (set.name == nft::kOwnedSet) set.elements.clear();
  }
  const Status no_marker = mapper_->Check(config);
  ASSERT_FALSE(no_marker.ok());
  EXPECT_EQ(no_marker.error().code, kErrCheckFailed);
  EXPECT_THAT(no_marker.error().msg, HasSubstr("nftables: missing"));

  FakeRuleset ruleset;
  auto mapper = MakeNftablesMapper(ruleset);
  ASSERT_TRUE(mapper->Forward(config).ok());
  for (auto& chain : ruleset.tables().at({kInet, nft::kTable}).chains) {
    if (chain.name == nft::NamesFor("rnet").Hostports()) chain.rules.clear();
  }
  const Status no_rules = mapper->Check(config);
  ASSERT_FALSE(no_rules.ok());
  EXPECT_EQ(no_rules.error().code, kErrCheckFailed);
  EXPECT_THAT(no_rules.error().msg, HasSubstr(nft::NamesFor("rnet").Hostports() + " has 0 rules"));
}

TEST_F(NftablesBackend, UsableFollowsTheProbe) {
  EXPECT_TRUE(mapper_->Usable().ok());
  ruleset_.SetUsable(false);
  const Status usable = mapper_->Usable();
  ASSERT_FALSE(usable.ok());
  EXPECT_EQ(usable.error().code, kErrPluginNotAvailable);
}

}  // namespace
}  // namespace nodegate::portmap
