#include "plugins/portmap/iptables/nft/table.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

#include "lib/cni/logging.h"
#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nlattr.h"
#include "lib/netfilter/release.h"

namespace nodegate::portmap::ipt {
namespace {

using netfilter::Attr;
using netfilter::AttrWriter;
using netfilter::ByteView;
using Bytes = std::vector<uint8_t>;

// Room for a NEWRULE's attributes besides the chain name: a layout rule is at most about 800
// bytes (an entry rule: comment 256, multiport 48 and their headers).
constexpr size_t kRuleMessageBytes = 1024;

// iptables-nft's built-in chains of table nat (nft.c builtin_table): hook and priority, in
// the order iptables-nft creates them.
struct BuiltinChain {
  const char* name;
  uint32_t hook;
  int32_t priority;
};
constexpr BuiltinChain kBuiltins[] = {
    {"PREROUTING", NF_INET_PRE_ROUTING, -100},
    {"INPUT", NF_INET_LOCAL_IN, 100},
    {"POSTROUTING", NF_INET_POST_ROUTING, 100},
    {"OUTPUT", NF_INET_LOCAL_OUT, -100},
};

const BuiltinChain* FindBuiltin(const std::string& chain) {
  for (const auto& b : kBuiltins) {
    if (chain == b.name) return &b;
  }
  return nullptr;
}

uint8_t NfFamily(net::Family family) {
  return family == net::Family::kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
}

using netfilter::ExtAckMessage;
using netfilter::NfnlMessage;
using netfilter::NfnlMessageLength;
using netfilter::NftMessageType;
using netfilter::ReadGeneration;
using netfilter::SingleGet;
using netfilter::Transact;
using netfilter::TransactSingles;
using netfilter::WriteNfnlMessage;

// The verdict a rule with `target` ends in (what NftRuleVerdict reads back).
NftVerdict VerdictOf(const Target& target) {
  if (const auto* jump = std::get_if<JumpTarget>(&target)) {
    if (jump->chain == kAcceptTarget) return {"", kAcceptTarget};  // a standard verdict
    return {jump->chain, ""};
  }
  if (std::holds_alternative<SetMarkTarget>(target)) return {"", "MARK"};
  if (std::holds_alternative<MasqueradeTarget>(target)) return {"", "MASQUERADE"};
  return {"", "DNAT"};
}

// The attributes after a reply's nfgenmsg.
std::optional<netfilter::AttrList> ReplyAttrs(const nlmsghdr* h) {
  const auto payload = netfilter::NfnlPayload(h);
  if (!payload) return std::nullopt;
  return netfilter::ParseAttrs(*payload);
}

std::string ErrnoText(int err, const std::string& ext_ack) {
  std::string text = std::strerror(err);
  if (!ext_ack.empty()) text += " (" + ext_ack + ")";
  return text;
}

// The socket of the last Usable probe, kept for the next Open in the same network namespace: a
// plugin probes the mode and then opens the table at once, and a new socket costs about ten
// system calls (most of the time of a call here is system calls).
struct SpareSocket {
  std::mutex mutex;
  sys::UniqueFd fd;
  ino_t netns = 0;
};
SpareSocket& Spare() {
  static auto* spare = new SpareSocket;  // never destroyed: the process may exit any time
  return *spare;
}
// Sequence numbers on a kept socket: everything sent on it before was answered, so any value
// past the probe's is free.
constexpr uint32_t kSpareSeq = 1;

ino_t CurrentNetns() {
  struct stat st {};
  return ::stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
}

Result<sys::UniqueFd> TakeSpareOrOpenSocket() {
  SpareSocket& spare = Spare();
  {
    const std::lock_guard<std::mutex> lock(spare.mutex);
    if (spare.fd.valid()) {
      sys::UniqueFd fd = std::move(spare.fd);
      if (spare.netns != 0 && spare.netns == CurrentNetns()) return fd;
      netfilter::HandOffBeforeClose(fd.get());
    }
  }
  return netfilter::OpenNfnlSocket();
}

void KeepSpare(sys::UniqueFd fd) {
  SpareSocket& spare = Spare();
  const std::lock_guard<std::mutex> lock(spare.mutex);
  if (spare.fd.valid()) netfilter::HandOffBeforeClose(spare.fd.get());
  spare.netns = CurrentNetns();
  spare.fd = std::move(fd);
}

// A GETRULE answer as a record, when it is a rule of `chain`.
// `keep` sees the rule's expressions before anything is copied (an empty view when it has none).
std::optional<NftRuleRecord> RuleRecordOf(
    const nlmsghdr* h, const std::string& chain,
    const std::function<bool(ByteView)>& keep = [](ByteView) { return true; }) {
  const auto payload = netfilter::NfnlPayload(h);
  if (!payload) return std::nullopt;
  std::optional<Attr> in_chain, handle, exprs, udata;
  const bool well_formed = netfilter::ForEachAttr(*payload, [&](const Attr& a) {
    if (a.type == NFTA_RULE_CHAIN) in_chain = a;
    if (a.type == NFTA_RULE_HANDLE) handle = a;
    if (a.type == NFTA_RULE_EXPRESSIONS) exprs = a;
    if (a.type == NFTA_RULE_USERDATA) udata = a;
    return true;
  });
  if (!well_formed || !in_chain || !handle || in_chain->View() != chain) return std::nullopt;
  if (!keep(exprs ? exprs->data : ByteView())) return std::nullopt;
  NftRuleRecord r;
  r.handle = handle->Be64();
  if (exprs) r.expressions.assign(exprs->data.begin(), exprs->data.end());
  if (udata) r.userdata.assign(udata->data.begin(), udata->data.end());
  r.verdict = NftRuleVerdict(r.expressions);
  return r;
}

}  // namespace

NftNatTable::NftNatTable(net::Family family, sys::UniqueFd fd)
    : family_(family), fd_(std::move(fd)) {}

NftNatTable::~NftNatTable() {
  // After a commit with deletions, closing the socket would wait for an RCU grace period.
  if (fd_.valid()) netfilter::HandOffBeforeClose(fd_.get());
}

std::string NftNatTable::name() const {
  return family_ == net::Family::kV4 ? "iptables-nft" : "ip6tables-nft";
}

bool NftNatTable::IsStaleGeneration(const Error& error) {
  return netfilter::IsStaleGeneration(error);
}

Error NftNatTable::StaleGeneration(const std::string& what) {
  return netfilter::StaleGeneration(what);
}

Status NftNatTable::Usable(net::Family family) {
  NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, TakeSpareOrOpenSocket());
  const std::string what = family == net::Family::kV4 ? "iptables-nft" : "ip6tables-nft";
  NG_RETURN_IF_ERROR(ReadGeneration(fd.get(), kSpareSeq, what));
  KeepSpare(std::move(fd));
  return OkStatus();
}

Result<std::unique_ptr<NftNatTable>> NftNatTable::Open(
    net::Family family, const std::vector<std::string>& chains_to_read) {
  NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, TakeSpareOrOpenSocket());
  std::unique_ptr<NftNatTable> table(new NftNatTable(family, std::move(fd)));
  table->seq_ = kSpareSeq;  // a reused socket answered kSpareSeq already; start past it
  NG_RETURN_IF_ERROR(table->ReadTableState(chains_to_read));
  return table;
}

std::vector<uint8_t> NftNatTable::ChainRequest(const std::string& chain, uint32_t seq) const {
  AttrWriter by_name;
  by_name.PutString(NFTA_CHAIN_TABLE, kTable);
  by_name.PutString(NFTA_CHAIN_NAME, chain);
  return NfnlMessage(NftMessageType(NFT_MSG_GETCHAIN), 0, seq, NfFamily(family_), 0,
                     by_name.bytes());
}

void NftNatTable::RecordChain(const std::string& chain, const nlmsghdr* answer) {
  auto attrs = ReplyAttrs(answer);
  const Attr* handle = attrs ? netfilter::FindAttr(*attrs, NFTA_CHAIN_HANDLE) : nullptr;
  const Attr* use = attrs ? netfilter::FindAttr(*attrs, NFTA_CHAIN_USE) : nullptr;
  chains_[chain] = ChainInfo{handle ? handle->Be64() : 0, use ? use->Be32() : 0};
}

// The generation, whether the table exists (GETTABLE by name) and the chains the caller will
// need (GETCHAIN by name), in one round trip: nothing whose size grows with the node. Other
// chains are looked up one by one when a method needs them, and rules are read (one dump per
// chain) only when a method needs them. Rule dumps are checked against this generation, and
// the batch is sent with it, so a decision made on a newer ruleset never commits: the kernel
// refuses the batch (ERESTART) and the caller rebuilds it.
Status NftNatTable::ReadTableState(const std::vector<std::string>& chains_to_read) {
  const uint32_t first_seq = seq_ + 1;
  std::optional<uint32_t> generation;
  std::vector<SingleGet> gets;
  gets.push_back(netfilter::GenerationGet(++seq_, name(), generation));
  AttrWriter by_name;
  by_name.PutString(NFTA_TABLE_NAME, kTable);
  table_exists_ = false;
  gets.push_back(SingleGet{NfnlMessage(NftMessageType(NFT_MSG_GETTABLE), 0, ++seq_,
                                       NfFamily(family_), 0, by_name.bytes()),
                           name() + ": get table nat",
                           [this](const nlmsghdr*) { table_exists_ = true; }});
  for (const auto& chain : chains_to_read) {
    if (chains_.count(chain) != 0) continue;
    chains_[chain] = std::nullopt;  // until its answer says otherwise
    gets.push_back(SingleGet{ChainRequest(chain, ++seq_), name() + ": get chain " + chain,
                             [this, chain](const nlmsghdr* h) { RecordChain(chain, h); }});
  }
  NG_RETURN_IF_ERROR(TransactSingles(fd_.get(), first_seq, gets));
  if (!generation) return Error(kErrKernel, name() + ": get nf_tables generation: no answer");
  generation_ = *generation;
  return OkStatus();
}

// Not checked against the generation: a chain seen in a newer ruleset can only lead to a batch,
// and the batch is refused for that generation anyway (ERESTART), so the caller rebuilds. An
// unreadable chain counts as absent; the kernel then refuses what needs it.
const NftNatTable::ChainInfo* NftNatTable::KernelChain(const std::string& chain) {
  auto it = chains_.find(chain);
  if (it == chains_.end()) {
    chains_[chain] = std::nullopt;
    if (table_exists_) {
      const uint32_t seq = ++seq_;
      (void)TransactSingles(fd_.get(), seq,
                            {SingleGet{ChainRequest(chain, seq), name() + ": get chain " + chain,
                                       [&](const nlmsghdr* h) { RecordChain(chain, h); }}});
    }
    it = chains_.find(chain);
  }
  return it->second ? &*it->second : nullptr;
}

bool NftNatTable::ChainInKernel(const std::string& chain) { return KernelChain(chain) != nullptr; }

Status NftNatTable::CheckGeneration() {
  NG_ASSIGN_OR_RETURN(const uint32_t now, ReadGeneration(fd_.get(), ++seq_, name()));
  if (now != generation_) {
    return StaleGeneration(name() + ": read table nat");
  }
  return OkStatus();
}

Result<std::vector<NftRuleRecord>> NftNatTable::DumpRules(const std::string& chain) {
  return RulesWhere(chain, [](ByteView) { return true; });
}

Result<std::vector<NftRuleRecord>> NftNatTable::RulesWhere(
    const std::string& chain, const std::function<bool(ByteView)>& keep) {
  std::vector<NftRuleRecord> rules;
  AttrWriter filter;
  filter.PutString(NFTA_RULE_TABLE, kTable);
  filter.PutString(NFTA_RULE_CHAIN, chain);
  const uint32_t seq = ++seq_;
  NG_RETURN_IF_ERROR(Transact(fd_.get(),
                              NfnlMessage(NftMessageType(NFT_MSG_GETRULE), NLM_F_DUMP, seq,
                                          NfFamily(family_), 0, filter.bytes()),
                              name() + ": list rules of chain " + chain,
                              [&](const nlmsghdr* h) {
                                if (auto r = RuleRecordOf(h, chain, keep))
                                  rules.push_back(std::move(*r));
                              },
                              {ENOENT}));
  reads_unconfirmed_ = true;
  return rules;
}

// One rule by handle (a GETRULE that is not a dump): nullopt when `chain` has no such rule.
Result<std::optional<NftRuleRecord>> NftNatTable::GetRule(const std::string& chain,
                                                          uint64_t handle) {
  std::optional<NftRuleRecord> rule;
  AttrWriter key;
  key.PutString(NFTA_RULE_TABLE, kTable);
  key.PutString(NFTA_RULE_CHAIN, chain);
  key.PutBe64(NFTA_RULE_HANDLE, handle);
  const uint32_t seq = ++seq_;
  NG_RETURN_IF_ERROR(Transact(
      fd_.get(),
      NfnlMessage(NftMessageType(NFT_MSG_GETRULE), 0, seq, NfFamily(family_), 0, key.bytes()),
      name() + ": get rule " + std::to_string(handle) + " of chain " + chain,
      [&](const nlmsghdr* h) { rule = RuleRecordOf(h, chain); }, {ENOENT}));
  return rule;
}

// Only reads: whatever they conclude is committed only if nothing changed since Open (the
// batch carries that generation), so a guess made on a newer ruleset is never applied.
Result<std::optional<std::vector<NftRuleRecord>>> NftNatTable::JumpsByHandle(
    const std::string& parent, const std::string& target) {
  using Found = std::optional<std::vector<NftRuleRecord>>;
  // Past this many handles without finding every jump, one dump is cheaper than more probes.
  constexpr uint64_t kProbes = 16;
  const ChainInfo* info = KernelChain(target);
  if (info == nullptr) return Found(std::vector<NftRuleRecord>{});
  NG_ASSIGN_OR_RETURN(const auto* own, Rules(target));
  if (info->use < own->size()) return Found();  // a count we do not understand
  const size_t jumps = info->use - own->size();
  uint64_t last = info->handle;
  for (const auto& r : *own) last = std::max(last, r.handle);
  std::vector<NftRuleRecord> found;
  for (uint64_t handle = last + 1; found.size() < jumps && handle <= last + kProbes; ++handle) {
    NG_ASSIGN_OR_RETURN(auto rule, GetRule(parent, handle));
    if (rule && rule->verdict.chain == target) found.push_back(std::move(*rule));
  }
  if (found.size() < jumps) return Found();
  return Found(std::move(found));
}

Result<const std::vector<NftRuleRecord>*> NftNatTable::Rules(const std::string& chain) {
  static const std::vector<NftRuleRecord> kNone;
  if (!ChainInKernel(chain)) return &kNone;
  auto it = rules_.find(chain);
  if (it == rules_.end()) {
    NG_ASSIGN_OR_RETURN(auto rules, DumpRules(chain));
    it = rules_.emplace(chain, std::move(rules)).first;
  }
  return &it->second;
}

std::set<std::string> NftNatTable::listed_chains() const {
  std::set<std::string> out;
  for (const auto& [chain, rules] : rules_) out.insert(chain);
  return out;
}

Result<std::vector<std::string>> NftNatTable::ListChains() {
  std::vector<std::string> out;
  if (!table_exists_) return out;
  AttrWriter filter;
  filter.PutString(NFTA_CHAIN_TABLE, kTable);
  const uint32_t seq = ++seq_;
  NG_RETURN_IF_ERROR(Transact(fd_.get(),
                              NfnlMessage(NftMessageType(NFT_MSG_GETCHAIN), NLM_F_DUMP, seq,
                                          NfFamily(family_), 0, filter.bytes()),
                              name() + ": list chains of table nat",
                              [&](const nlmsghdr* h) {
                                auto attrs = ReplyAttrs(h);
                                if (!attrs) return;
                                const Attr* table = netfilter::FindAttr(*attrs, NFTA_CHAIN_TABLE);
                                const Attr* chain = netfilter::FindAttr(*attrs, NFTA_CHAIN_NAME);
                                if (table != nullptr && chain != nullptr &&
                                    table->String() == kTable) {
                                  out.push_back(chain->String());
                                }
                              },
                              {ENOENT}));
  reads_unconfirmed_ = true;
  std::sort(out.begin(), out.end());
  return out;
}

// ---- reads

bool NftNatTable::HasChain(const std::string& chain) {
  return FindBuiltin(chain) != nullptr || ChainInKernel(chain);
}

// Only rules with the same verdict are decoded (cheap to read for every rule of a long chain),
// each once, and looked up by printed canonical form; the form is only an index: equality is
// SameNftRule's.
Result<bool> NftNatTable::HasRule(const std::string& chain, const Rule& rule) {
  const auto key = std::make_pair(chain, VerdictOf(rule.target));
  auto it = decoded_.find(key);
  if (it == decoded_.end()) {
    NG_ASSIGN_OR_RETURN(const auto* rules, Rules(chain));
    std::multimap<std::string, Rule> index;
    for (const auto& r : *rules) {
      if (r.verdict != key.second) continue;
      if (auto existing = DecodeNftRule(r.expressions, family_, r.userdata)) {
        Rule canonical = CanonicalRule(*existing);
        index.emplace(canonical.ToString(), std::move(canonical));
      }
    }
    it = decoded_.emplace(key, std::move(index)).first;
  }
  const Rule wanted = CanonicalRule(rule);
  auto [first, last] = it->second.equal_range(wanted.ToString());
  return std::any_of(first, last, [&](const auto& entry) { return entry.second == wanted; });
}

Result<std::map<std::string, CommentOwner>> NftNatTable::EntryOwners() {
  std::map<std::string, CommentOwner> out;
  NG_ASSIGN_OR_RETURN(const auto* rules, Rules(kDnatChain));
  for (const auto& r : *rules) {
    const std::string& target = r.verdict.chain;
    if (target.rfind("CNI-DN-", 0) != 0) continue;
    const auto comment = NftRuleComment(r.expressions, r.userdata);
    if (!comment) continue;
    if (auto owner = ParseEntryComment(*comment)) out[target] = *owner;
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> NftNatTable::JumpComments(
    const std::string& parent, const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  NG_ASSIGN_OR_RETURN(const auto* rules, Rules(parent));
  for (const auto& r : *rules) {
    const std::string& target = r.verdict.chain;
    if (target.empty() || target.rfind(prefix, 0) != 0) continue;
    out.emplace_back(target, NftRuleComment(r.expressions, r.userdata).value_or(""));
  }
  return out;
}

// ---- buffered changes

bool NftNatTable::ChainExists(const std::string& chain) {
  return created_.count(chain) > 0 || (deleted_.count(chain) == 0 && ChainInKernel(chain));
}

// A new table gets its four built-in chains at once, in iptables' order, as iptables-nft 1.8.4
// makes a table (every command of it creates the missing ones; later versions create each with
// its first rule). 1.8.4 lists chains in the kernel's order, so a table we made first then
// lists as one the reference's first command made; later versions list built-in chains
// whether they exist or not.
void NftNatTable::EnsureTable() {
  if (table_exists_) return;
  AttrWriter a;
  a.PutString(NFTA_TABLE_NAME, kTable);
  Queue(NFT_MSG_NEWTABLE, NLM_F_CREATE, a.bytes(), "create table nat");
  table_exists_ = true;
  for (const auto& builtin : kBuiltins) CreateBuiltin(builtin.name);
}

// A base chain of type nat with the accept policy (nft.c nft_chain_builtin_add).
void NftNatTable::CreateBuiltin(const std::string& chain) {
  const BuiltinChain& builtin = *FindBuiltin(chain);
  AttrWriter a;
  a.PutString(NFTA_CHAIN_TABLE, kTable);
  a.PutString(NFTA_CHAIN_NAME, builtin.name);
  const size_t hook = a.BeginNested(NFTA_CHAIN_HOOK);
  a.PutBe32(NFTA_HOOK_HOOKNUM, builtin.hook);
  a.PutBe32(NFTA_HOOK_PRIORITY, static_cast<uint32_t>(builtin.priority));
  a.EndNested(hook);
  a.PutBe32(NFTA_CHAIN_POLICY, NF_ACCEPT);
  a.PutString(NFTA_CHAIN_TYPE, "nat");
  Queue(NFT_MSG_NEWCHAIN, NLM_F_CREATE, a.bytes(), "create built-in chain " + chain);
  created_.insert(chain);
  deleted_.erase(chain);
}

// In a table that exists, a missing built-in chain is created by the first rule added to it
// (nft.c nft_xt_builtin_init since 1.8.5). Any other chain must exist.
Status NftNatTable::EnsureChainForRule(const std::string& chain) {
  if (ChainExists(chain)) return OkStatus();
  if (FindBuiltin(chain) == nullptr) {
    return Error(kErrKernel, "chain " + chain + " does not exist");
  }
  if (!table_exists_) {
    EnsureTable();  // creates every built-in chain
    return OkStatus();
  }
  CreateBuiltin(chain);
  return OkStatus();
}

Status NftNatTable::CreateChain(const std::string& chain) {
  if (FindBuiltin(chain) != nullptr) return EnsureChainForRule(chain);
  if (ChainExists(chain)) {
    return Error(kErrKernel, name() + ": create chain " + chain + ": " + std::strerror(EEXIST));
  }
  EnsureTable();
  AttrWriter a;
  a.PutString(NFTA_CHAIN_TABLE, kTable);
  a.PutString(NFTA_CHAIN_NAME, chain);
  // As `iptables -N`: EXCL, so a chain someone else created meanwhile is an error.
  Queue(NFT_MSG_NEWCHAIN, NLM_F_EXCL, a.bytes(), "create chain " + chain);
  created_.insert(chain);
  deleted_.erase(chain);
  flushed_.erase(chain);
  return OkStatus();
}

namespace {

// A rule as errors name it: "append to CHAIN rule \"-p tcp ...\"".
std::string RuleWhat(bool append, const std::string& chain, const std::string& rule) {
  return std::string(append ? "append to " : "insert into ") + chain + " rule \"" + rule + "\"";
}

}  // namespace

// The message is written once, in place; the rule's text is made only for an error (a pod with
// thousands of host ports appends thousands of rules).
Status NftNatTable::AddRule(const std::string& chain, const Rule& rule, bool append) {
  const auto in_context = [&](const Error& e) {
    return e.WithContext(name() + ": " + RuleWhat(append, chain, rule.ToString()));
  };
  AttrWriter a;
  a.Reserve(kRuleMessageBytes + chain.size());
  a.PutString(NFTA_RULE_TABLE, kTable);
  a.PutString(NFTA_RULE_CHAIN, chain);
  if (Status s = AppendNftRuleAttrs(rule, family_, a); !s.ok()) return in_context(s.error());
  if (Status s = EnsureChainForRule(chain); !s.ok()) return in_context(s.error());
  // Without APPEND (and without a position) the kernel inserts at the head: `-I chain 1`.
  const uint16_t flags = NLM_F_CREATE | (append ? NLM_F_APPEND : 0);
  Queue(NFT_MSG_NEWRULE, flags, a.bytes(), "");
  return OkStatus();
}

Status NftNatTable::Append(const std::string& chain, const Rule& rule) {
  return AddRule(chain, rule, true);
}

Status NftNatTable::InsertFirst(const std::string& chain, const Rule& rule) {
  return AddRule(chain, rule, false);
}

Status NftNatTable::DeleteJumps(const std::string& chain, const std::set<std::string>& targets) {
  if (deleted_.count(chain) > 0 || flushed_.count(chain) > 0 || !ChainInKernel(chain)) {
    return OkStatus();
  }
  std::vector<NftRuleRecord> doomed;
  bool complete = rules_.count(chain) == 0;  // a parent already listed needs no probing
  for (const auto& target : targets) {
    if (!complete) break;
    NG_ASSIGN_OR_RETURN(auto jumps, JumpsByHandle(chain, target));
    if (!jumps) complete = false;
    if (jumps) doomed.insert(doomed.end(), jumps->begin(), jumps->end());
  }
  if (!complete) {
    NG_ASSIGN_OR_RETURN(const auto* rules, Rules(chain));
    doomed.clear();
    for (const auto& r : *rules) {
      if (targets.count(r.verdict.chain) > 0) doomed.push_back(r);
    }
  }
  for (const auto& r : doomed) {
    if (!deleted_handles_.insert(r.handle).second) continue;
    AttrWriter a;
    a.PutString(NFTA_RULE_TABLE, kTable);
    a.PutString(NFTA_RULE_CHAIN, chain);
    a.PutBe64(NFTA_RULE_HANDLE, r.handle);
    Queue(NFT_MSG_DELRULE, 0, a.bytes(),
          "delete rule " + std::to_string(r.handle) + " (-j " + r.verdict.chain + ") of " + chain);
  }
  return OkStatus();
}

Status NftNatTable::Flush(const std::string& chain) {
  if (!ChainExists(chain)) {
    if (FindBuiltin(chain) != nullptr) return OkStatus();  // not created yet: nothing in it
    return Error(kErrKernel, name() + ": flush chain " + chain + ": " + std::strerror(ENOENT));
  }
  AttrWriter a;
  a.PutString(NFTA_RULE_TABLE, kTable);
  a.PutString(NFTA_RULE_CHAIN, chain);
  Queue(NFT_MSG_DELRULE, 0, a.bytes(), "flush chain " + chain);
  // A later DeleteJumps must not delete these rules a second time (ENOENT at commit).
  flushed_.insert(chain);
  return OkStatus();
}

Status NftNatTable::DeleteChain(const std::string& chain) {
  if (FindBuiltin(chain) != nullptr) {
    return Error(kErrKernel, name() + ": delete chain " + chain + ": built-in chain");
  }
  if (!ChainExists(chain)) {
    return Error(kErrKernel, name() + ": delete chain " + chain + ": " + std::strerror(ENOENT));
  }
  AttrWriter a;
  a.PutString(NFTA_CHAIN_TABLE, kTable);
  a.PutString(NFTA_CHAIN_NAME, chain);
  // As `iptables -X`: NONREC, so a chain that still has rules is refused (EBUSY).
  Queue(NFT_MSG_DELCHAIN, NLM_F_NONREC, a.bytes(), "delete chain " + chain);
  created_.erase(chain);
  deleted_.insert(chain);
  return OkStatus();
}

// ---- commit

// What an op's message changes, for an error: its `what`, or for a rule (which has none) the
// rule as decoded from the message.
std::string NftNatTable::Describe(const Op& op) const {
  if (!op.what.empty()) return op.what;
  const auto* h = reinterpret_cast<const nlmsghdr*>(op.message);
  const auto attrs = ReplyAttrs(h);
  const Attr* chain = attrs ? netfilter::FindAttr(*attrs, NFTA_RULE_CHAIN) : nullptr;
  const Attr* exprs = attrs ? netfilter::FindAttr(*attrs, NFTA_RULE_EXPRESSIONS) : nullptr;
  const auto rule = exprs ? DecodeNftRule(exprs->data, family_) : std::nullopt;
  return RuleWhat((h->nlmsg_flags & NLM_F_APPEND) != 0, chain ? chain->String() : "?",
                  rule ? rule->ToString() : "?");
}

void NftNatTable::Queue(uint16_t type, uint16_t flags, const Bytes& attrs, std::string what) {
  uint8_t* message = pending_.Append(NfnlMessageLength(attrs.size()));
  WriteNfnlMessage(message, NftMessageType(type), flags, 0, NfFamily(family_), 0, attrs);
  ops_.push_back({message, std::move(what)});
}

// Numbers the buffered messages after BATCH_BEGIN's sequence number. Failures are always
// answered; the last message also asks for an ack, so a batch that went through to its end
// is confirmed.
uint32_t NftNatTable::NumberMessages(const std::vector<Op>& ops) {
  const uint32_t begin_seq = ++seq_;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto* header = reinterpret_cast<nlmsghdr*>(ops[i].message);
    header->nlmsg_seq = ++seq_;
    if (i + 1 == ops.size()) header->nlmsg_flags |= NLM_F_ACK;
  }
  ++seq_;  // BATCH_END's
  return begin_seq;
}

// The first refusal names its change; without one, the last message's ack confirms the batch.
Status NftNatTable::CheckBatchAnswers(uint32_t begin_seq, const std::vector<Op>& ops,
                                      const std::vector<netfilter::BatchAnswer>& answers) const {
  const std::string what = name() + ": commit table nat";
  const uint32_t last_seq = begin_seq + static_cast<uint32_t>(ops.size());
  bool acked = false;
  for (const auto& answer : answers) {
    if (answer.error != 0) {
      const std::string object = Describe(ops[answer.seq - begin_seq - 1]);
      return Error(kErrKernel,
                   what + ": " + object + ": " + ErrnoText(answer.error, answer.ext_ack));
    }
    acked |= answer.seq == last_seq;
  }
  if (!acked) return Error(kErrKernel, what + ": the kernel did not acknowledge the batch");
  return OkStatus();
}

Status NftNatTable::ConfirmReads() {
  if (!reads_unconfirmed_) return OkStatus();
  NG_RETURN_IF_ERROR(CheckGeneration());
  reads_unconfirmed_ = false;
  return OkStatus();
}

Status NftNatTable::Commit() {
  if (ops_.empty()) return OkStatus();
  // One attempt: whatever the outcome, the buffered changes are spent.
  const std::vector<Op> ops = std::move(ops_);
  const netfilter::MessageChunks messages = std::move(pending_);
  ops_.clear();
  const uint32_t begin_seq = NumberMessages(ops);
  // BATCH_BEGIN carries the generation the batch was built on (NFNL_BATCH_GENID, Linux 4.11):
  // the kernel refuses the whole batch with ERESTART if anything committed since.
  const std::vector<ByteView> views = messages.Views();
  NG_ASSIGN_OR_RETURN(
      const std::vector<netfilter::BatchAnswer> answers,
      netfilter::SendBatch(fd_.get(),
                           netfilter::NfnlBatch{begin_seq, generation_, views, ops.size()},
                           name() + ": commit table nat"));
  return CheckBatchAnswers(begin_seq, ops, answers);
}

Status TransactNftWith(const NftTableOpener& open, const NatTableChange& change) {
  for (int attempt = 1;; ++attempt) {
    // A read or the commit finding a newer generation means: start over on the new one.
    const auto stale = [&](const Error& e) {
      return NftNatTable::IsStaleGeneration(e) && attempt < kNftCommitAttempts;
    };
    auto table = open();
    if (!table.ok()) {
      if (stale(table.error())) continue;
      return table.error();
    }
    Result<bool> changed = change(**table);
    if (!changed.ok()) {
      if (stale(changed.error())) continue;
      return changed.error();
    }
    if (!*changed) {
      // Nothing to commit: what the change read is its answer, so it must be of one generation.
      Status confirmed = (*table)->ConfirmReads();
      if (confirmed.ok() || !stale(confirmed.error())) return confirmed;
      continue;
    }
    Status committed = (*table)->Commit();
    if (committed.ok() || !stale(committed.error())) return committed;
    cni::LogDebug("{}: ruleset changed during the transaction, rebuilding", (*table)->name());
  }
}

Status TransactNft(net::Family family, const NatTableChange& change,
                   const std::vector<std::string>& chains_read) {
  const NftTableOpener open = [&]() -> Result<std::unique_ptr<NftTransactionTable>> {
    NG_ASSIGN_OR_RETURN(auto table, NftNatTable::Open(family, chains_read));
    return std::unique_ptr<NftTransactionTable>(std::move(table));
  };
  return TransactNftWith(open, change);
}

}  // namespace nodegate::portmap::ipt
