// TransactNft's retry loop (TransactNftWith) over a scripted table nat: a stale generation met
// at open, at a read inside the change, at the confirmation of a change that buffered nothing
// or at the commit starts the attempt over on the table as the other writer left it, at most
// kNftCommitAttempts times; any other error ends the transaction at once. The kernel's
// NftNatTable is the netns tier's (tests/portmap/iptables_nft_test.cc).
#include "plugins/portmap/iptables/nft/table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/netfilter/nfnl.h"

namespace nodegate::portmap::ipt {
namespace {

using Chains = std::map<std::string, std::vector<Rule>>;

// Where in an attempt something happens to it.
enum class Point { kOpen, kRead, kConfirm, kCommit };

// Table nat as nf_tables keeps it for the loop: rules per chain and a generation that every
// commit moves on. Another writer (a script) may commit at a point of the next attempts, and a
// point may fail once with an error that is not about the generation.
struct ScriptedKernel {
  struct Writer {
    Point point;
    int times;
    std::function<void(Chains&)> write;
  };

  // Another writer commits here, if scripted to: true when it did.
  bool WriterCommitsAt(Point point) {
    if (!writer || writer->point != point || writer->times == 0) return false;
    --writer->times;
    writer->write(chains);
    ++generation;
    return true;
  }
  // The scripted failure of this point, once.
  std::optional<Error> FailureAt(Point point, const std::string& what) {
    if (failure_at != point) return std::nullopt;
    failure_at.reset();
    return Error(kErrKernel, what + ": Operation not permitted");
  }

  Chains chains;
  uint32_t generation = 1;
  std::optional<Writer> writer;
  std::optional<Point> failure_at;
  int opens = 0;
  int confirmations = 0;  // ConfirmReads calls that had reads to confirm
  int commits = 0;        // commits of our batches that the kernel applied
};

// One attempt's table: the kernel's chains at open, and the appends buffered since.
class ScriptedTable final : public NftTransactionTable {
 public:
  explicit ScriptedTable(ScriptedKernel& kernel)
      : kernel_(kernel), chains_(kernel.chains), generation_(kernel.generation) {}

  net::Family family() const override { return net::Family::kV4; }
  std::string name() const override { return "iptables-nft"; }

  bool HasChain(const std::string& chain) override { return chains_.count(chain) > 0; }
  // A dump of the chain: a commit by another writer during it interrupts it (NLM_F_DUMP_INTR).
  Result<bool> HasRule(const std::string& chain, const Rule& rule) override {
    const std::string what = name() + ": list rules of chain " + chain;
    if (auto failure = kernel_.FailureAt(Point::kRead, what)) return *failure;
    if (kernel_.WriterCommitsAt(Point::kRead)) return NftNatTable::StaleGeneration(what);
    reads_unconfirmed_ = true;
    const auto& rules = chains_[chain];
    return std::find(rules.begin(), rules.end(), rule) != rules.end();
  }
  Status Append(const std::string& chain, const Rule& rule) override {
    appends_.emplace_back(chain, rule);
    return OkStatus();
  }

  Status ConfirmReads() override {
    if (!reads_unconfirmed_) return OkStatus();
    ++kernel_.confirmations;
    const std::string what = name() + ": read table nat";
    if (auto failure = kernel_.FailureAt(Point::kConfirm, what)) return *failure;
    kernel_.WriterCommitsAt(Point::kConfirm);
    if (kernel_.generation != generation_) return NftNatTable::StaleGeneration(what);
    reads_unconfirmed_ = false;
    return OkStatus();
  }
  Status Commit() override {
    if (appends_.empty()) return OkStatus();
    const std::string what = name() + ": commit table nat";
    if (auto failure = kernel_.FailureAt(Point::kCommit, what)) return *failure;
    kernel_.WriterCommitsAt(Point::kCommit);
    if (kernel_.generation != generation_) return NftNatTable::StaleGeneration(what);
    for (const auto& [chain, rule] : appends_) kernel_.chains[chain].push_back(rule);
    ++kernel_.generation;
    ++kernel_.commits;
    return OkStatus();
  }

  // Not used by the loop's changes here.
  Status CreateChain(const std::string&) override { return Unscripted("CreateChain"); }
  Status InsertFirst(const std::string&, const Rule&) override { return Unscripted("InsertFirst"); }
  Status DeleteJumps(const std::string&, const std::set<std::string>&) override {
    return Unscripted("DeleteJumps");
  }
  Status Flush(const std::string&) override { return Unscripted("Flush"); }
  Status DeleteChain(const std::string&) override { return Unscripted("DeleteChain"); }
  Result<std::map<std::string, CommentOwner>> EntryOwners() override {
    return Unscripted("EntryOwners");
  }
  Result<std::vector<std::pair<std::string, std::string>>> JumpComments(
      const std::string&, const std::string&) override {
    return Unscripted("JumpComments");
  }

 private:
  static Error Unscripted(const std::string& method) {
    ADD_FAILURE() << method << " is not scripted";
    return Error(kErrKernel, method + " is not scripted");
  }

  ScriptedKernel& kernel_;
  Chains chains_;
  uint32_t generation_;
  bool reads_unconfirmed_ = false;
  std::vector<std::pair<std::string, Rule>> appends_;
};

Rule Masquerade() { return Rule{{}, {MarkMatch{0x2000, 0x2000}}, MasqueradeTarget{}}; }
Rule Other() { return Rule{{}, {MarkMatch{0x4000, 0x4000}}, MasqueradeTarget{}}; }

class TransactNftLoop : public ::testing::Test {
 protected:
  // The kernel's table, opened afresh per attempt; a scripted open failure or stale open
  // (another writer committed while Open read) comes first.
  Status Transact(const NatTableChange& change) {
    const NftTableOpener open = [this]() -> Result<std::unique_ptr<NftTransactionTable>> {
      ++kernel_.opens;
      const std::string what = "iptables-nft: get table nat";
      if (auto failure = kernel_.FailureAt(Point::kOpen, what)) return *failure;
      if (kernel_.WriterCommitsAt(Point::kOpen)) return NftNatTable::StaleGeneration(what);
      return std::unique_ptr<NftTransactionTable>(new ScriptedTable(kernel_));
    };
    return TransactNftWith(open, change);
  }

  // The layout's way with a shared rule: appended to kMasqChain only when it is not there.
  NatTableChange EnsureMasquerade() {
    return [this](NatTable& table) -> Result<bool> {
      ++runs_;
      NG_ASSIGN_OR_RETURN(const bool present, table.HasRule(kMasqChain, Masquerade()));
      if (present) return false;
      NG_RETURN_IF_ERROR(table.Append(kMasqChain, Masquerade()));
      return true;
    };
  }

  // Another writer appends `rule` at `point` of the next `times` attempts.
  void WriterAppends(Point point, const Rule& rule, int times = 1) {
    kernel_.writer = ScriptedKernel::Writer{
        point, times, [rule](Chains& chains) { chains[kMasqChain].push_back(rule); }};
  }

  // The rules of kMasqChain as iptables-save prints them.
  std::vector<std::string> MasqRules() {
    std::vector<std::string> out;
    for (const auto& rule : kernel_.chains[kMasqChain]) out.push_back(rule.ToString());
    return out;
  }

  ScriptedKernel kernel_;
  int runs_ = 0;  // how many times the change ran
};

TEST_F(TransactNftLoop, CommitsOnceWhenNothingIntervenes) {
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 1);
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(kernel_.commits, 1);
  EXPECT_EQ(MasqRules(), std::vector<std::string>{Masquerade().ToString()});
}

TEST_F(TransactNftLoop, StaleOpenOpensAgain) {
  WriterAppends(Point::kOpen, Other());
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 2);
  EXPECT_EQ(runs_, 1);  // the change never ran on the stale open
  EXPECT_EQ(kernel_.commits, 1);
  EXPECT_EQ(MasqRules(), (std::vector<std::string>{Other().ToString(), Masquerade().ToString()}));
}

TEST_F(TransactNftLoop, StaleReadRunsTheChangeAgainOnTheNewTable) {
  WriterAppends(Point::kRead, Other());
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 2);
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(kernel_.commits, 1);
  EXPECT_EQ(MasqRules(), (std::vector<std::string>{Other().ToString(), Masquerade().ToString()}));
}

// The rule was there, so the change buffered nothing; another writer deleted it before the
// reads were confirmed: the change runs again, finds it missing and appends it.
TEST_F(TransactNftLoop, StaleConfirmationOfANoOpChangeRunsItAgain) {
  kernel_.chains[kMasqChain] = {Masquerade()};
  kernel_.writer = ScriptedKernel::Writer{Point::kConfirm, 1,
                                          [](Chains& chains) { chains[kMasqChain].clear(); }};
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 2);
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(kernel_.confirmations, 1);
  EXPECT_EQ(kernel_.commits, 1);
  EXPECT_EQ(MasqRules(), std::vector<std::string>{Masquerade().ToString()});
}

TEST_F(TransactNftLoop, StaleCommitRunsTheChangeAgainOnTheNewTable) {
  WriterAppends(Point::kCommit, Other());
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 2);
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(kernel_.commits, 1);
  EXPECT_EQ(MasqRules(), (std::vector<std::string>{Other().ToString(), Masquerade().ToString()}));
}

// The other writer added the very rule: the second run finds it, commits nothing and confirms
// what it read, so the rule is there once.
TEST_F(TransactNftLoop, StaleCommitRebuildsTheDecision) {
  WriterAppends(Point::kCommit, Masquerade());
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 2);
  EXPECT_EQ(runs_, 2);
  EXPECT_EQ(kernel_.commits, 0);
  EXPECT_EQ(kernel_.confirmations, 1);
  EXPECT_EQ(MasqRules(), std::vector<std::string>{Masquerade().ToString()});
}

TEST_F(TransactNftLoop, NoOpChangeCommitsNothingAndConfirmsItsReads) {
  kernel_.chains[kMasqChain] = {Masquerade()};
  const uint32_t generation = kernel_.generation;
  const Status s = Transact(EnsureMasquerade());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(kernel_.opens, 1);
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(kernel_.confirmations, 1);
  EXPECT_EQ(kernel_.commits, 0);
  EXPECT_EQ(kernel_.generation, generation);
}

struct PointCase {
  Point point;
  std::string what;  // the scripted table's message at this point
};

void PrintTo(const PointCase& point, std::ostream* out) { *out << point.what; }

std::string PointName(const ::testing::TestParamInfo<PointCase>& info) {
  switch (info.param.point) {
    case Point::kOpen:
      return "Open";
    case Point::kRead:
      return "Read";
    case Point::kConfirm:
      return "Confirm";
    case Point::kCommit:
      return "Commit";
  }
  return "Unknown";
}

class TransactNftAtEveryPoint : public TransactNftLoop,
                                public ::testing::WithParamInterface<PointCase> {
 protected:
  // At the confirmation the change must have buffered nothing: the rule is there already.
  void SetUp() override {
    if (GetParam().point == Point::kConfirm) kernel_.chains[kMasqChain] = {Masquerade()};
  }
};

// Whatever the point, the loop gives up after kNftCommitAttempts attempts with the last
// attempt's own error, which says the ruleset changed (IsStaleGeneration: the plugin's caller
// may try again), and nothing of ours is committed.
TEST_P(TransactNftAtEveryPoint, GivesUpAfterTheLastAttemptWithTheStaleError) {
  WriterAppends(GetParam().point, Other(), 1000);
  const Status s = Transact(EnsureMasquerade());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(NftNatTable::IsStaleGeneration(s.error()));
  EXPECT_EQ(s.error().code, kErrKernel);
  EXPECT_EQ(s.error().msg,
            GetParam().what + ": " + std::string(netfilter::kStaleGenerationDetails));
  EXPECT_EQ(kernel_.opens, kNftCommitAttempts);
  EXPECT_EQ(kernel_.commits, 0);
  EXPECT_EQ(kernel_.writer->times, 1000 - kNftCommitAttempts);
}

TEST_P(TransactNftAtEveryPoint, OtherErrorsAreReturnedWithoutRetrying) {
  kernel_.failure_at = GetParam().point;
  const Status s = Transact(EnsureMasquerade());
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(NftNatTable::IsStaleGeneration(s.error()));
  EXPECT_EQ(s.error().msg, GetParam().what + ": Operation not permitted");
  EXPECT_EQ(kernel_.opens, 1);
  EXPECT_EQ(kernel_.commits, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Points, TransactNftAtEveryPoint,
    ::testing::Values(PointCase{Point::kOpen, "iptables-nft: get table nat"},
                      PointCase{Point::kRead,
                                "iptables-nft: list rules of chain " + std::string(kMasqChain)},
                      PointCase{Point::kConfirm, "iptables-nft: read table nat"},
                      PointCase{Point::kCommit, "iptables-nft: commit table nat"}),
    PointName);

}  // namespace
}  // namespace nodegate::portmap::ipt
