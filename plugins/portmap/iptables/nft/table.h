#pragma once
// Table nat of one family in nf_tables (`table ip nat` / `table ip6 nat`), written so that
// every iptables-nft from 1.8.4 on reads it as its own (docs/iptables-nft-encoding.md), over one
// raw nfnetlink socket: no iptables process, no libnftables (the encoding is described in
// encode.h).
//
//   Open     GETGEN, GETTABLE and GETCHAIN of the chains the caller names, sent together (one
//            round trip): nothing whose size grows with the node. Any other chain is looked
//            up by name the first time a method needs it, and a chain's rules are read only
//            when a method needs them (one GETRULE dump of that chain, kept).
//   changes  buffered as one batch: NEWTABLE and the four built-in chains when the table is
//            missing (as iptables-nft 1.8.4 makes a table), a built-in chain missing from an
//            existing table created by the first rule added to it (as 1.8.5 and later), NEWRULE
//            CREATE|APPEND (InsertFirst: CREATE, i.e. at the head, as `-I chain 1`),
//            DELRULE by handle, flush = DELRULE without handle, DELCHAIN.
//   DeleteJumps  finds the jumps to a container chain without listing the parent chain
//            (thousands of entry rules on a busy node) when it can: the kernel hands out
//            rule handles from one counter per table, so an entry rule added after its
//            chain's own rules has the next handles; these are probed one by one (GETRULE by
//            handle) until the chain's reference count (NFTA_CHAIN_USE: its own rules plus
//            the jumps to it) is accounted for. Otherwise, one dump of the parent.
//   Commit   one sendmsg: BATCH_BEGIN carrying the generation read at Open ... BATCH_END.
//            If anything committed since, the kernel rejects the whole batch (ERESTART):
//            IsStaleGeneration(error) is true, nothing was applied, and the caller opens a
//            new object and rebuilds its changes.
//
//   for (int attempt = 0;; ++attempt) {
//     NG_ASSIGN_OR_RETURN(auto table, NftNatTable::Open(net::Family::kV4));
//     ... table->HasRule / Append / DeleteJumps ...
//     Status s = table->Commit();
//     if (s.ok() || !NftNatTable::IsStaleGeneration(s.error()) || attempt == kMax) return s;
//   }
//
// Reads are not checked one by one: a decision made on a newer ruleset can only become a batch,
// which the kernel refuses for the old generation. A caller that commits nothing and trusts
// what it read (CHECK, GC, listings) calls ConfirmReads: one GETGEN, failing the same way
// (IsStaleGeneration) when anything committed since Open, so no answer mixes two generations.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/message_chunks.h"
#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nlattr.h"
#include "lib/sys/fd.h"
#include "plugins/portmap/iptables/nat_table.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/rules.h"

struct nlmsghdr;

namespace nodegate::portmap::ipt {

// One rule of a chain as the kernel dumped it.
struct NftRuleRecord {
  uint64_t handle = 0;
  std::vector<uint8_t> expressions;  // NFTA_RULE_EXPRESSIONS payload
  std::vector<uint8_t> userdata;     // NFTA_RULE_USERDATA, usually empty
  NftVerdict verdict;                // NftRuleVerdict(expressions)
};

// What TransactNft's loop needs of one attempt's table besides reading and buffering: the
// confirmation of a read-only answer and the commit, each failing with IsStaleGeneration when
// another writer committed since the table was read. NftNatTable is the kernel's; the loop's
// unit test (table_test.cc) scripts one.
class NftTransactionTable : public NatTable {
 public:
  virtual Status ConfirmReads() = 0;
  virtual Status Commit() = 0;
};

class NftNatTable final : public NftTransactionTable {
 public:
  // Reads the generation of `ip nat` / `ip6 nat` in the calling thread's network namespace,
  // and the chains in `chains_to_read` (those the caller will ask about: one round trip for
  // all of them instead of one each). A missing table is no error (no chains). Errors: code 100.
  static Result<std::unique_ptr<NftNatTable>> Open(
      net::Family family, const std::vector<std::string>& chains_to_read = {});
  // nf_tables answers (GETGEN) in the calling thread's network namespace.
  static Status Usable(net::Family family);
  // Whether `error` (code 100) means the ruleset changed since Open: reopen and rebuild.
  static bool IsStaleGeneration(const Error& error);
  // Such an error, for a reader of several tables that found their generations apart.
  static Error StaleGeneration(const std::string& what);

  ~NftNatTable() override;

  net::Family family() const override { return family_; }
  std::string name() const override;

  // Whether the chain exists (looked up by name once); the built-in chains always "exist" (as
  // iptables-nft shows them), even before their first rule creates them.
  bool HasChain(const std::string& chain) override;
  Result<bool> HasRule(const std::string& chain, const Rule& rule) override;

  Status CreateChain(const std::string& chain) override;
  Status Append(const std::string& chain, const Rule& rule) override;
  Status InsertFirst(const std::string& chain, const Rule& rule) override;
  Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) override;
  Status Flush(const std::string& chain) override;
  Status DeleteChain(const std::string& chain) override;
  Result<std::map<std::string, CommentOwner>> EntryOwners() override;
  Result<std::vector<std::pair<std::string, std::string>>> JumpComments(
      const std::string& parent, const std::string& prefix) override;

  // Whether everything read since Open (or the last confirmation) was of Open's generation.
  // Errors: code 100; IsStaleGeneration when the ruleset changed meanwhile.
  Status ConfirmReads() override;
  // Sends the buffered changes as one batch and reads the kernel's answers. Nothing buffered:
  // nothing sent. Errors: code 100, "<name>: commit table nat: <what failed>: <errno text>".
  Status Commit() override;

  // For tests and diagnostics: the generation read at Open, every chain of the table (one
  // dump, sorted), and a chain's rules (read once, then cached; empty for a chain that does not
  // exist).
  uint32_t generation() const { return generation_; }
  Result<std::vector<std::string>> ListChains();
  Result<const std::vector<NftRuleRecord>*> Rules(const std::string& chain);
  // The rules of `chain` whose expressions `keep` accepts, seen in the dump's own buffer: one
  // dump, nothing kept by this object, nothing copied of the rules passed over.
  Result<std::vector<NftRuleRecord>> RulesWhere(
      const std::string& chain, const std::function<bool(netfilter::ByteView)>& keep);
  // The chains whose rules this object has listed so far (DeleteJumps lists its parent only
  // when probing by handle could not account for every jump).
  std::set<std::string> listed_chains() const;

 private:
  // One buffered change: its message, in pending_.
  struct Op {
    uint8_t* message = nullptr;
    std::string what;  // for errors: "delete chain CNI-DN-..."; empty for a rule (Describe)
  };
  std::string Describe(const Op& op) const;

  NftNatTable(net::Family family, sys::UniqueFd fd);
  Status ReadTableState(const std::vector<std::string>& chains_to_read);
  // GETCHAIN of `chain` by name, and what its answer (the chain's message) records in chains_.
  std::vector<uint8_t> ChainRequest(const std::string& chain, uint32_t seq) const;
  void RecordChain(const std::string& chain, const nlmsghdr* answer);
  Result<std::vector<NftRuleRecord>> DumpRules(const std::string& chain);
  Status CheckGeneration();
  // A chain as GETCHAIN answered: nullopt when it does not exist.
  struct ChainInfo {
    uint64_t handle = 0;
    uint32_t use = 0;  // NFTA_CHAIN_USE: its rules plus the rules and elements that jump to it
  };
  const ChainInfo* KernelChain(const std::string& chain);
  Result<std::optional<NftRuleRecord>> GetRule(const std::string& chain, uint64_t handle);
  // The rules of `parent` that jump to `target`, found by probing the handles after the
  // target's own rules; nullopt when not all of them could be accounted for that way.
  Result<std::optional<std::vector<NftRuleRecord>>> JumpsByHandle(const std::string& parent,
                                                                  const std::string& target);
  // In the kernel (looked up by name, then remembered), or created by this batch, and not
  // deleted by it.
  bool ChainInKernel(const std::string& chain);
  bool ChainExists(const std::string& chain);
  void EnsureTable();
  void CreateBuiltin(const std::string& chain);  // one of the four built-in chains
  Status EnsureChainForRule(const std::string& chain);
  Status AddRule(const std::string& chain, const Rule& rule, bool append);
  // Buffers one message (flags: NLM_F_* besides NLM_F_REQUEST).
  void Queue(uint16_t type, uint16_t flags, const std::vector<uint8_t>& attrs, std::string what);
  // Numbers the buffered messages for one batch: BATCH_BEGIN's sequence number.
  uint32_t NumberMessages(const std::vector<Op>& ops);
  Status CheckBatchAnswers(uint32_t begin_seq, const std::vector<Op>& ops,
                           const std::vector<netfilter::BatchAnswer>& answers) const;

  net::Family family_;
  sys::UniqueFd fd_;
  uint32_t seq_ = 0;
  uint32_t generation_ = 0;
  bool table_exists_ = false;
  bool reads_unconfirmed_ = false;  // rules or chains listed since the last ConfirmReads
  std::map<std::string, std::optional<ChainInfo>> chains_;   // as looked up by name
  std::map<std::string, std::vector<NftRuleRecord>> rules_;  // chain -> rules, read lazily
  // (chain, verdict) -> the chain's rules ending in that verdict, decoded into canonical form
  // and indexed by their printed form: built at the first HasRule that needs it, so a CHECK of
  // thousands of rules is not quadratic, and rules ending elsewhere are never decoded.
  std::map<std::pair<std::string, NftVerdict>, std::multimap<std::string, Rule>> decoded_;
  std::set<std::string> created_;  // chains this batch creates
  std::set<std::string> deleted_;  // chains this batch deletes
  std::set<std::string> flushed_;  // chains this batch flushes
  std::set<uint64_t> deleted_handles_;
  std::vector<Op> ops_;
  netfilter::MessageChunks pending_;  // the messages of ops_, in order
};

// Builds one batch on the generation it read and sends it with that generation. When another
// writer committed in between, the kernel refuses the whole batch and `change` runs again on
// what is there now (as iptables-nft does, but bounded). `chains_read`: the chains `change`
// asks about, read in Open's one round trip. Nothing to commit: the reads are confirmed to be
// of one generation.
Status TransactNft(net::Family family, const NatTableChange& change,
                   const std::vector<std::string>& chains_read);

// How many attempts (each on a table opened afresh) TransactNft makes before it returns the
// stale-generation error: each attempt is one generation-checked batch, and only a commit by
// another writer between its reads and its batch makes one fail, so under heavy churn this is
// still ample.
inline constexpr int kNftCommitAttempts = 50;

// One attempt's table, read afresh (NftNatTable::Open for TransactNft).
using NftTableOpener = std::function<Result<std::unique_ptr<NftTransactionTable>>()>;

// TransactNft's loop over the tables `open` returns: an attempt whose open, reads (in `change`),
// confirmation or commit finds a newer generation starts over on a new table, at most
// kNftCommitAttempts times; any other error is returned at once. A change that buffers nothing
// commits nothing and has its reads confirmed instead.
Status TransactNftWith(const NftTableOpener& open, const NatTableChange& change);

}  // namespace nodegate::portmap::ipt
