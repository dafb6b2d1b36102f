#pragma once
// An in-memory netfilter::Ruleset (lib/netfilter/ruleset.h) with nf_tables' semantics as its
// users meet them, in the manner of knftables' Fake: tables, chains (with their hooks), sets
// and maps (flags, key and data types, elements with key, key end, data, comment, interval
// ends), rules (handles, expressions, user data), and a generation every commit bumps.
//
// A commit reads the batch as the kernel does: it decodes the netlink messages NftBatch
// encoded (so the encoding is checked too), applies them in order to a copy, answers each, and
// keeps the copy only when none was refused, as the kernel's abort does. What it refuses as
// the kernel does: ENOENT for what is missing (a table, chain, set, element or rule handle, a
// set a lookup names, a chain a jump names), EEXIST for creating an element whose key is there
// (kCreate) or adding one with other data, EBUSY for deleting a chain that holds rules or is
// jumped to and a set a rule looks up, EINVAL for a set without its batch ID, a key or data of
// the wrong length or an expression it cannot decode, and the whole batch (StaleGeneration,
// nfnl.h) when it was built on a generation that is no longer the current one. Rules read back
// as the kernel dumps them (anonymous sets by their __setN names, nat ranges filled in).
// tests/netfilter/fake_ruleset_netns_test.cc holds all this against the kernel.
//
// It can be told to fail an operation (a read, or a commit as a broken exchange) at its Nth
// call, to refuse the Nth commit with an errno, to let another writer commit just before the
// next commits (so a commit on the generation read earlier is stale and the caller reads
// again), and dumps its ruleset as text for assertions.
//
//   netfilter::testing::FakeRuleset ruleset;
//   auto mapper = portmap::MakeNftablesMapper(ruleset);
//   ruleset.ConcurrentWrite([&](FakeRuleset&) { other->Forward(config2); });
//   EXPECT_TRUE(mapper->Forward(config).ok());
//   EXPECT_EQ(ruleset.Dump(), before);

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"
#include "lib/netfilter/ruleset.h"

namespace nodegate::netfilter::testing {

struct FakeElement {
  Bytes key, key_end, data;
  uint32_t flags = 0;  // NFT_SET_ELEM_INTERVAL_END
  Bytes userdata;      // the comment is record 0 (UserDataComment)
};

struct FakeSet {
  std::string name;
  uint32_t flags = 0;  // NFT_SET_*
  uint32_t key_type = 0, key_len = 0, data_type = 0, data_len = 0;
  std::vector<uint32_t> field_lens;
  Bytes userdata;
  std::vector<FakeElement> elements;  // in the order added
};

struct FakeRule {
  uint64_t handle = 0;
  Bytes expressions;  // NFTA_RULE_EXPRESSIONS as the kernel dumps it (DecodeExpressions)
  Bytes userdata;
  std::vector<std::string> sets;  // the sets its lookups name (anonymous ones by their name)
};

struct FakeChain {
  std::string name;
  std::optional<NftHook> hook;  // a base chain
  Bytes userdata;
  std::vector<FakeRule> rules;
};

struct FakeTable {
  Bytes userdata;
  std::vector<FakeChain> chains;  // in the order created, as the kernel lists them
  std::vector<FakeSet> sets;
  uint64_t next_handle = 1;  // the table's handles (its sets', chains' and rules')
};

// Every table by (family, name).
using FakeTables = std::map<std::pair<uint8_t, std::string>, FakeTable>;

class FakeRuleset final : public Ruleset {
 public:
  // The operations a fault can name.
  static constexpr char kOpen[] = "open";
  static constexpr char kGeneration[] = "generation";
  static constexpr char kSetNames[] = "set names";
  static constexpr char kElement[] = "element";
  static constexpr char kElements[] = "elements";
  static constexpr char kChainComment[] = "chain comment";
  static constexpr char kSet[] = "set";
  static constexpr char kRules[] = "rules";
  static constexpr char kHasTables[] = "has tables";
  static constexpr char kProbe[] = "probe";
  static constexpr char kCommit[] = "commit";  // the exchange breaks: whether it applied is
                                               // unknown (here: it did not)

  // Ruleset
  Result<std::unique_ptr<TableReads>> OpenTable(uint8_t family, const std::string& table) override;
  Result<std::vector<bool>> HasTables(const std::vector<TableRef>& tables) override;
  Status Probe() override;
  Result<std::vector<BatchRefusal>> Commit(const NftBatch& batch,
                                           std::optional<uint32_t> generation = {}) override;

  // The `nth` call (counted from now, 1 = the next) of `operation` fails with code 100.
  void FailOperation(const std::string& operation, int nth = 1);
  // The `nth` commit (counted from now) that reaches the ruleset has its first message refused
  // with `error` (EPERM, ENOMEM...), its only refusal: nothing of it applies.
  void RefuseCommit(int error, int nth = 1);
  // Which commits a concurrent writer goes before: any, or only those made on a generation
  // (Commit with one: the caller read, then built its batch on what it read).
  enum class Commits { kAny, kOnGeneration };
  // The next `times` such commits find that another writer committed just before them: `write`
  // runs (it may change tables() or commit through this ruleset itself, without meeting a
  // writer), the generation goes up, then the commit goes on (refused whole when it was built
  // on the earlier generation).
  void ConcurrentWrite(std::function<void(FakeRuleset&)> write, int times = 1,
                       Commits before = Commits::kAny);
  // nf_tables does not answer at all (a kernel without it): every call fails.
  void SetUsable(bool usable) { usable_ = usable; }

  // The committed ruleset, to seed or change behind its users' back.
  FakeTables& tables() { return tables_; }
  const FakeTables& tables() const { return tables_; }
  const FakeTable* FindTable(uint8_t family, const std::string& table) const;
  const FakeSet* FindSet(uint8_t family, const std::string& table, const std::string& set) const;
  const FakeChain* FindChain(uint8_t family, const std::string& table,
                             const std::string& chain) const;

  // Every table as text, one object per line: "table inet NAME", "  set NAME flags 0x.. key
  // TYPE/LEN [data TYPE/LEN]", "    element KEY[-KEY_END] [end] [: DATA] ["COMMENT"]" (hex),
  // "  chain NAME [hook N priority P type T] ["COMMENT"]", "    rule HANDLE ["COMMENT"]" and
  // its expressions as `nft --debug=netlink` prints them. Tables, sets and chains by name;
  // elements and rules in order. "" when there is no table.
  std::string Dump() const;
  uint32_t generation() const { return generation_; }
  // Batches applied; Commit calls (applied, refused, stale or failed).
  int commits() const { return commits_; }
  int commit_calls() const { return commit_calls_; }
  // Calls of a read operation so far (kOpen, kElements...).
  int calls(const std::string& operation) const;

  // What the reads call first: counts the call and returns the fault it meets, if any.
  Status Enter(const std::string& operation, const std::string& what);

 private:
  struct PendingFault {
    std::string operation;
    int remaining = 1;
    int error = 0;  // RefuseCommit's errno; 0 for FailOperation's
  };
  struct Writer {
    std::function<void(FakeRuleset&)> write;
    Commits before = Commits::kAny;
  };
  // The concurrent writer due before a commit (`on_generation`: made on one), if any.
  void RunConcurrentWriter(bool on_generation);

  FakeTables tables_;
  uint32_t generation_ = 1;
  int commits_ = 0;
  int commit_calls_ = 0;
  bool usable_ = true;
  bool in_writer_ = false;
  std::vector<Writer> writers_;
  std::vector<PendingFault> faults_;
  std::map<std::string, int> calls_;
};

}  // namespace nodegate::netfilter::testing
