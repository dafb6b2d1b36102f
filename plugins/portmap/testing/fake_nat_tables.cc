#include "plugins/portmap/testing/fake_nat_tables.h"

#include <algorithm>
#include <set>

namespace nodegate::portmap::testing {
namespace {

const std::set<std::string>& Builtins() {
  static const std::set<std::string> builtins = {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"};
  return builtins;
}

FakeChains EmptyTable() {
  FakeChains chains;
  for (const auto& chain : Builtins()) chains[chain];
  return chains;
}

const std::string* JumpOf(const ipt::Rule& rule) {
  const auto* jump = std::get_if<ipt::JumpTarget>(&rule.target);
  return jump ? &jump->chain : nullptr;
}

std::string FirstComment(const ipt::Rule& rule) {
  for (const auto& match : rule.matches) {
    if (const auto* comment = std::get_if<ipt::CommentMatch>(&match)) return comment->text;
  }
  return "";
}

// One attempt of a transaction: a copy of the committed table, changed in place (reads see
// the buffered changes, as libiptc's snapshot does), checked operation by operation.
class FakeNatTable final : public ipt::NatTable {
 public:
  FakeNatTable(FakeNatTables& owner, net::Family family, IptablesMode mode, FakeChains chains)
      : owner_(owner), family_(family), name_(FakeTableName(family, mode)), chains_(chains) {}

  net::Family family() const override { return family_; }
  std::string name() const override { return name_; }
  const FakeChains& chains() const { return chains_; }

  bool HasChain(const std::string& chain) override { return chains_.count(chain) > 0; }

  Result<bool> HasRule(const std::string& chain, const ipt::Rule& rule) override {
    auto it = chains_.find(chain);
    if (it == chains_.end()) return Fail("check rule in " + chain, "No chain by that name");
    return std::find(it->second.begin(), it->second.end(), rule) != it->second.end();
  }

  Status CreateChain(const std::string& chain) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kCreateChain, chain));
    if (HasChain(chain)) return Fail("create chain " + chain, "File exists");
    chains_[chain];
    return OkStatus();
  }

  Status Append(const std::string& chain, const ipt::Rule& rule) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kAppend, chain));
    if (!HasChain(chain)) return Fail("append to " + chain, "No chain by that name");
    chains_[chain].push_back(rule);
    return OkStatus();
  }

  Status InsertFirst(const std::string& chain, const ipt::Rule& rule) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kInsertFirst, chain));
    if (!HasChain(chain)) return Fail("insert into " + chain, "No chain by that name");
    auto& rules = chains_[chain];
    rules.insert(rules.begin(), rule);
    return OkStatus();
  }

  Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kDeleteJumps, chain));
    auto it = chains_.find(chain);
    if (it == chains_.end()) return OkStatus();
    std::erase_if(it->second, [&](const ipt::Rule& rule) {
      const std::string* jump = JumpOf(rule);
      return jump && targets.count(*jump) > 0;
    });
    return OkStatus();
  }

  Status Flush(const std::string& chain) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kFlush, chain));
    auto it = chains_.find(chain);
    if (it == chains_.end()) return Fail("flush chain " + chain, "No chain by that name");
    it->second.clear();
    return OkStatus();
  }

  Status DeleteChain(const std::string& chain) override {
    NG_RETURN_IF_ERROR(Injected(FakeNatTables::kDeleteChain, chain));
    auto it = chains_.find(chain);
    if (it == chains_.end() || Builtins().count(chain) > 0) {
      return Fail("delete chain " + chain, "No chain by that name");
    }
    if (!it->second.empty()) return Fail("delete chain " + chain, "Directory not empty");
    for (const auto& [other, rules] : chains_) {
      for (const auto& rule : rules) {
        const std::string* jump = JumpOf(rule);
        if (jump && *jump == chain) return Fail("delete chain " + chain, "Too many links");
      }
    }
    chains_.erase(it);
    return OkStatus();
  }

  Result<std::map<std::string, ipt::CommentOwner>> EntryOwners() override {
    std::map<std::string, ipt::CommentOwner> out;
    auto it = chains_.find(ipt::kDnatChain);
    if (it == chains_.end()) return out;
    for (const auto& rule : it->second) {
      const std::string* jump = JumpOf(rule);
      if (!jump || jump->rfind("CNI-DN-", 0) != 0) continue;
      if (auto owner = ipt::ParseEntryComment(FirstComment(rule))) out[*jump] = *owner;
    }
    return out;
  }

  Result<std::vector<std::pair<std::string, std::string>>> JumpComments(
      const std::string& parent, const std::string& prefix) override {
    std::vector<std::pair<std::string, std::string>> out;
    auto it = chains_.find(parent);
    if (it == chains_.end()) return out;
    for (const auto& rule : it->second) {
      const std::string* jump = JumpOf(rule);
      if (jump && jump->rfind(prefix, 0) == 0) out.emplace_back(*jump, FirstComment(rule));
    }
    return out;
  }

  // What nf_tables refuses at commit: a jump to a chain the table does not have.
  Status CheckReferences() const {
    for (const auto& [chain, rules] : chains_) {
      for (const auto& rule : rules) {
        const std::string* jump = JumpOf(rule);
        if (jump && *jump != ipt::kAcceptTarget && chains_.count(*jump) == 0) {
          return Fail("commit table nat", "rule in " + chain + " jumps to missing chain " + *jump);
        }
      }
    }
    return OkStatus();
  }

 private:
  Status Injected(const std::string& operation, const std::string& chain) {
    if (auto fault = owner_.Fault(family_, operation, name_ + ": " + operation + " " + chain)) {
      return *fault;
    }
    return OkStatus();
  }
  Error Fail(const std::string& what, const std::string& why) const {
    return Error(kErrKernel, name_ + ": " + what + ": " + why);
  }

  FakeNatTables& owner_;
  net::Family family_;
  std::string name_;
  FakeChains chains_;
};

}  // namespace

std::string FakeTableName(net::Family family, IptablesMode mode) {
  const std::string base = family == net::Family::kV4 ? "iptables" : "ip6tables";
  return mode == IptablesMode::kNft ? base + "-nft" : base;
}

FakeNatTables::FakeNatTables() = default;

FakeNatTables::Table& FakeNatTables::TableOf(net::Family family, IptablesMode mode) {
  auto [it, fresh] = tables_.try_emplace({family, mode});
  if (fresh) it->second.chains = EmptyTable();
  return it->second;
}

const FakeNatTables::Table* FakeNatTables::FindTable(net::Family family, IptablesMode mode) const {
  auto it = tables_.find({family, mode});
  return it == tables_.end() ? nullptr : &it->second;
}

Status FakeNatTables::Transact(net::Family family, IptablesMode mode,
                               const ipt::NatTableChange& change,
                               const std::vector<std::string>& /*chains_read*/) {
  Table& table = TableOf(family, mode);
  const std::string name = FakeTableName(family, mode);
  if (!table.usable) return Error(kErrKernel, name + ": table nat does not answer");
  table.loaded = true;
  for (int attempt = 1;; ++attempt) {
    ++table.attempts;
    FakeNatTable working(*this, family, mode, table.chains);
    NG_ASSIGN_OR_RETURN(const bool changed, change(working));
    // Another writer committed since this attempt read the table: nf_tables refuses the batch
    // (or the confirmation of a read-only one), libiptc's commit fails with EAGAIN.
    const bool raced = !table.concurrent.empty() && (changed || mode == IptablesMode::kNft);
    if (raced) {
      auto write = std::move(table.concurrent.front());
      table.concurrent.erase(table.concurrent.begin());
      write(table.chains);
      if (attempt < kAttempts) continue;
      return Error(kErrKernel, name + ": commit table nat: table changed during the transaction");
    }
    if (!changed) return OkStatus();
    if (auto fault = Fault(family, kCommit, name + ": commit table nat")) return *fault;
    NG_RETURN_IF_ERROR(working.CheckReferences());
    table.chains = working.chains();
    ++table.commits;
    return OkStatus();
  }
}

ModeChoice FakeNatTables::ChooseMode(net::Family /*family*/,
                                     std::optional<IptablesMode> configured) {
  if (configured) return {*configured, "configured"};
  return {node_mode_, "the fake node's mode"};
}

bool FakeNatTables::Usable(net::Family family, IptablesMode mode) {
  return TableOf(family, mode).usable;
}

bool FakeNatTables::MayHoldChain(net::Family family, IptablesMode mode, const std::string& chain) {
  const Table* table = FindTable(family, mode);
  if (table == nullptr || !table->usable) return false;
  if (mode == IptablesMode::kLegacy) return table->loaded;
  return table->chains.count(chain) > 0;
}

void FakeNatTables::SetUsable(net::Family family, IptablesMode mode, bool usable) {
  TableOf(family, mode).usable = usable;
}

void FakeNatTables::FailOperation(const std::string& operation, std::optional<net::Family> family,
                                  int nth) {
  faults_.push_back({operation, family, nth});
}

void FakeNatTables::ConcurrentWrite(net::Family family, IptablesMode mode,
                                    std::function<void(FakeChains&)> write, int times) {
  for (int i = 0; i < times; ++i) TableOf(family, mode).concurrent.push_back(write);
}

std::optional<Error> FakeNatTables::Fault(net::Family family, const std::string& operation,
                                          const std::string& what) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->operation != operation || (it->family && *it->family != family)) continue;
    if (--it->remaining > 0) continue;
    faults_.erase(it);
    return Error(kErrKernel, what + ": injected fault");
  }
  return std::nullopt;
}

FakeChains& FakeNatTables::Chains(net::Family family, IptablesMode mode) {
  Table& table = TableOf(family, mode);
  table.loaded = true;
  return table.chains;
}

bool FakeNatTables::Loaded(net::Family family, IptablesMode mode) const {
  const Table* table = FindTable(family, mode);
  return table != nullptr && table->loaded;
}

std::string FakeNatTables::Dump(net::Family family, IptablesMode mode) const {
  const Table* table = FindTable(family, mode);
  if (table == nullptr) return "";
  std::string out;
  for (const auto& [chain, rules] : table->chains) {
    if (Builtins().count(chain) == 0) out += "-N " + chain + "\n";
  }
  for (const auto& [chain, rules] : table->chains) {
    for (const auto& rule : rules) out += "-A " + chain + " " + rule.ToString() + "\n";
  }
  return out;
}

int FakeNatTables::commits(net::Family family, IptablesMode mode) const {
  const Table* table = FindTable(family, mode);
  return table ? table->commits : 0;
}

int FakeNatTables::attempts(net::Family family, IptablesMode mode) const {
  const Table* table = FindTable(family, mode);
  return table ? table->attempts : 0;
}

}  // namespace nodegate::portmap::testing
