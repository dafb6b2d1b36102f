// The iptables backend: the reference's rule layout in table nat, in the node's iptables mode
// (iptables_mode.h): x_tables through libiptc under the xtables lock the iptables tools take,
// or nf_tables in iptables-nft's encoding through generation-checked netlink batches
// (iptables_nft_table.h). One transaction per family per call; concurrent iptables users lose
// nothing in either mode.
extern "C" {  // libip6tc.h lacks its own C linkage block
#include <libiptc/libip6tc.h>
}
#include <libiptc/libiptc.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "lib/base/scope_guard.h"
#include "lib/netfilter/query.h"
#include "lib/sys/fd.h"
#include "lib/sys/file_lock.h"
#include "plugins/portmap/iptables_encode.h"
#include "plugins/portmap/iptables_legacy_ops.h"
#include "plugins/portmap/iptables_mode.h"
#include "plugins/portmap/iptables_nft_table.h"
#include "plugins/portmap/iptables_rules.h"
#include "plugins/portmap/nat_table.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using ipt::LegacyOps;
using ipt::NftNatTable;
using ipt::Plan;
using ipt::Rule;

constexpr char kXtablesLock[] = "/run/xtables.lock";
constexpr int kCommitAttempts = 3;
// Each attempt is one generation-checked batch; only a commit by another writer between our
// read and our batch makes one fail, so under heavy churn this is still ample.
constexpr int kNftCommitAttempts = 50;

// One snapshot of a legacy table nat; changes are buffered until Commit().
class LegacyNatTable final : public ipt::NatTable {
 public:
  static Result<std::unique_ptr<LegacyNatTable>> Open(const LegacyOps& ops) {
    xtc_handle* h = ops.init(ipt::kTable);
    if (h == nullptr) {
      const int err = errno;
      return Error(kErrKernel,
                   std::string(ops.name) + ": cannot read table nat: " + ops.strerror(err));
    }
    return std::unique_ptr<LegacyNatTable>(new LegacyNatTable(ops, h));
  }
  LegacyNatTable(const LegacyNatTable&) = delete;
  LegacyNatTable& operator=(const LegacyNatTable&) = delete;
  ~LegacyNatTable() override { ops_->free(h_); }

  net::Family family() const override { return ops_->family; }
  std::string name() const override { return ops_->name; }
  bool HasChain(const std::string& chain) override { return ops_->is_chain(chain.c_str(), h_); }

  Result<bool> HasRule(const std::string& chain, const Rule& rule) override {
    const auto wanted = ipt::EncodeRule(rule, ops_->family);
    const std::string wanted_target = ipt::TargetName(rule);
    for (const uint8_t* e = ops_->first_rule(chain.c_str(), h_); e != nullptr;
         e = ops_->next_rule(e, h_)) {
      const char* target = ops_->get_target(e, h_);
      if (ipt::SameRule(e, target ? target : "", wanted, wanted_target, ops_->family)) {
        return true;
      }
    }
    return false;
  }

  Status CreateChain(const std::string& chain) override {
    if (!ops_->create_chain(chain.c_str(), h_)) return Fail("create chain " + chain);
    return OkStatus();
  }

  Status Append(const std::string& chain, const Rule& rule) override {
    const auto blob = ipt::EncodeRule(rule, ops_->family);
    if (!ops_->append(chain.c_str(), blob.data(), h_)) {
      return Fail("append to " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  Status InsertFirst(const std::string& chain, const Rule& rule) override {
    const auto blob = ipt::EncodeRule(rule, ops_->family);
    if (!ops_->insert(chain.c_str(), blob.data(), 0, h_)) {
      return Fail("insert into " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) override {
    if (!HasChain(chain)) return OkStatus();
    std::vector<unsigned int> doomed;
    unsigned int index = 0;
    for (const uint8_t* e = ops_->first_rule(chain.c_str(), h_); e != nullptr;
         e = ops_->next_rule(e, h_), ++index) {
      const char* target = ops_->get_target(e, h_);
      if (target != nullptr && targets.count(target) > 0) doomed.push_back(index);
    }
    for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
      if (!ops_->delete_num_entry(chain.c_str(), *it, h_)) {
        return Fail("delete rule " + std::to_string(*it + 1) + " of " + chain);
      }
    }
    return OkStatus();
  }

  Status Flush(const std::string& chain) override {
    if (!ops_->flush_entries(chain.c_str(), h_)) return Fail("flush chain " + chain);
    return OkStatus();
  }

  Status DeleteChain(const std::string& chain) override {
    if (!ops_->delete_chain(chain.c_str(), h_)) return Fail("delete chain " + chain);
    return OkStatus();
  }

  Result<std::map<std::string, ipt::CommentOwner>> EntryOwners() override {
    std::map<std::string, ipt::CommentOwner> out;
    if (!HasChain(ipt::kDnatChain)) return out;
    for (const uint8_t* e = ops_->first_rule(ipt::kDnatChain, h_); e != nullptr;
         e = ops_->next_rule(e, h_)) {
      const char* target = ops_->get_target(e, h_);
      if (target == nullptr || std::string_view(target).rfind("CNI-DN-", 0) != 0) continue;
      if (auto owner = ipt::ParseEntryComment(ipt::EntryCommentText(e, ops_->family))) {
        out[target] = *owner;
      }
    }
    return out;
  }

  Status Commit() {
    if (!ops_->commit(h_)) {
      commit_errno_ = errno;
      return Fail("commit table nat");
    }
    return OkStatus();
  }
  int commit_errno() const { return commit_errno_; }

 private:
  LegacyNatTable(const LegacyOps& ops, xtc_handle* h) : ops_(&ops), h_(h) {}
  Status Fail(const std::string& what) const {
    const int err = errno;
    return Error(kErrKernel, std::string(ops_->name) + ": " + what + ": " + ops_->strerror(err));
  }
  const LegacyOps* ops_;
  xtc_handle* h_;
  int commit_errno_ = 0;
};

using Change = std::function<Result<bool>(ipt::NatTable&)>;

// Legacy: runs `change` on a fresh snapshot under the xtables lock and commits it when it
// reports a change. A commit that raced with a writer that ignores the lock (EAGAIN) is retried
// on a new snapshot.
Status TransactLegacy(const LegacyOps& ops, const Change& change) {
  NG_ASSIGN_OR_RETURN(auto lock, sys::FileLock::Acquire(kXtablesLock));
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(auto table, LegacyNatTable::Open(ops));
    NG_ASSIGN_OR_RETURN(const bool changed, change(*table));
    if (!changed) return OkStatus();
    Status committed = table->Commit();
    if (committed.ok() || table->commit_errno() != EAGAIN || attempt == kCommitAttempts) {
      return committed;
    }
    spdlog::info("{}: table nat changed during commit, retrying", ops.name);
  }
}

// nf_tables: builds one batch on the generation it read and sends it with that generation.
// When another writer committed in between, the kernel refuses the whole batch and it is
// rebuilt from what is there now (as iptables-nft does, but bounded).
Status TransactNft(net::Family family, const Change& change,
                   const std::vector<std::string>& chains_read) {
  for (int attempt = 1;; ++attempt) {
    // A read or the commit finding a newer generation means: start over on the new one.
    const auto stale = [&](const Error& e) {
      return NftNatTable::IsStaleGeneration(e) && attempt < kNftCommitAttempts;
    };
    auto table = NftNatTable::Open(family, chains_read);
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
    spdlog::debug("{}: ruleset changed during the transaction, rebuilding", (*table)->name());
  }
}

Status TransactLegacyFamily(net::Family family, const Change& change) {
  NG_ASSIGN_OR_RETURN(const LegacyOps* ops, ipt::LoadLegacyOps(family));
  return TransactLegacy(*ops, change);
}

// `chains_read`: the chains `change` asks about (nf_tables reads them all in one round trip
// when the transaction opens; the legacy table is one snapshot anyway).
Status Transact(net::Family family, IptablesMode mode, const Change& change,
                const std::vector<std::string>& chains_read = {}) {
  return mode == IptablesMode::kNft ? TransactNft(family, change, chains_read)
                                    : TransactLegacyFamily(family, change);
}

// The chains ApplyPlan and CheckPlan ask about.
std::vector<std::string> ChainsRead(const Plan& plan) {
  std::vector<std::string> chains = plan.shared_chains;
  for (const auto& shared : plan.shared_rules) chains.push_back(shared.chain);
  chains.push_back(plan.container_chain);
  return chains;
}

// The rule set of a plan into `table`: shared chains and rules when missing, this container's
// chain and entry rules replaced.
Result<bool> ApplyPlan(ipt::NatTable& table, const Plan& plan) {
  for (const auto& chain : plan.shared_chains) {
    if (!table.HasChain(chain)) NG_RETURN_IF_ERROR(table.CreateChain(chain));
  }
  for (const auto& shared : plan.shared_rules) {
    NG_ASSIGN_OR_RETURN(const bool present, table.HasChain(shared.chain)
                                                ? table.HasRule(shared.chain, shared.rule)
                                                : Result<bool>(false));
    if (present) continue;
    NG_RETURN_IF_ERROR(shared.insert_first ? table.InsertFirst(shared.chain, shared.rule)
                                           : table.Append(shared.chain, shared.rule));
  }
  // Re-ADD replaces: drop this container's entry rules and chain content first.
  if (table.HasChain(plan.container_chain)) {
    NG_RETURN_IF_ERROR(table.DeleteJumps(ipt::kDnatChain, {plan.container_chain}));
    NG_RETURN_IF_ERROR(table.Flush(plan.container_chain));
  } else {
    NG_RETURN_IF_ERROR(table.CreateChain(plan.container_chain));
  }
  for (const auto& rule : plan.container_rules) {
    NG_RETURN_IF_ERROR(table.Append(plan.container_chain, rule));
  }
  for (const auto& rule : plan.entry_rules) {
    NG_RETURN_IF_ERROR(table.Append(ipt::kDnatChain, rule));
  }
  return true;
}

// Removes per-container chains and the rules that jump to them from `parent`.
Result<bool> RemoveChains(ipt::NatTable& table, const std::string& parent,
                          const std::set<std::string>& chains) {
  std::set<std::string> present;
  for (const auto& chain : chains) {
    if (table.HasChain(chain)) present.insert(chain);
  }
  if (present.empty()) return false;
  NG_RETURN_IF_ERROR(table.DeleteJumps(parent, present));
  for (const auto& chain : present) {
    NG_RETURN_IF_ERROR(table.Flush(chain));
    NG_RETURN_IF_ERROR(table.DeleteChain(chain));
  }
  return true;
}

// Removes the container's chains in one family and mode, in one transaction that commits
// only when there is something to remove.
Status TeardownFamily(net::Family family, IptablesMode mode, const std::string& network,
                      const std::string& id) {
  const std::string dnat_chain = ipt::ContainerChainName(network, id);
  const std::string snat_chain = ipt::LegacySnatChainName(network, id);
  return Transact(
      family, mode,
      [&](ipt::NatTable& table) -> Result<bool> {
        NG_ASSIGN_OR_RETURN(bool dnat, RemoveChains(table, ipt::kDnatChain, {dnat_chain}));
        // The chain of plugins older than 0.8 (SNAT for hairpin), removed like the reference.
        NG_ASSIGN_OR_RETURN(bool snat, RemoveChains(table, ipt::kLegacySnatChain, {snat_chain}));
        return dnat || snat;
      },
      {dnat_chain, snat_chain});
}

// Whether table nat of the family answers, from its header alone (IPT_SO_GET_INFO, a few
// hundred bytes; opening a snapshot copies the whole table, about 6 ms per 1,000 mappings).
// The kernel loads iptable_nat for this request when needed, as it does for libiptc's.
template <typename Info>
bool TableAnswers(int domain, int level, int option) {
  sys::UniqueFd fd(::socket(domain, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
  if (!fd.valid()) return false;
  Info info{};
  std::strncpy(info.name, ipt::kTable, sizeof(info.name) - 1);
  socklen_t len = sizeof(info);
  return ::getsockopt(fd.get(), level, option, &info, &len) == 0;
}

bool LegacyUsable(net::Family family) {
  return family == net::Family::kV4
             ? TableAnswers<ipt_getinfo>(AF_INET, IPPROTO_IP, IPT_SO_GET_INFO)
             : TableAnswers<ip6t_getinfo>(AF_INET6, IPPROTO_IPV6, IP6T_SO_GET_INFO);
}

bool ModeUsable(net::Family family, IptablesMode mode) {
  return mode == IptablesMode::kNft ? NftNatTable::Usable(family).ok() : LegacyUsable(family);
}

// Whether table nat of the other mode may hold this layout's rules, without creating it: a
// node that switched modes keeps the old mode's rules until they are removed.
bool ModeHasLayout(net::Family family, IptablesMode mode) {
  if (mode == IptablesMode::kLegacy) return LegacyTableLoaded(family, ipt::kTable);
  auto present =
      netfilter::HasChain(family == net::Family::kV4 ? 2 : 10, ipt::kTable, ipt::kDnatChain);
  return present.ok() && *present;
}

IptablesMode Other(IptablesMode mode) {
  return mode == IptablesMode::kNft ? IptablesMode::kLegacy : IptablesMode::kNft;
}

class IptablesMapper : public PortMapper {
 public:
  explicit IptablesMapper(std::optional<IptablesMode> configured) : configured_(configured) {}

  // The mode of each family, chosen once per call (iptables_mode.h).
  IptablesMode ModeOf(net::Family family) {
    auto& slot = family == net::Family::kV4 ? mode4_ : mode6_;
    if (!slot) {
      const ModeChoice choice = ChooseMode(family, configured_, NodeView::Real());
      spdlog::debug("portmap: IPv{} iptables layout in {} mode ({})", Digit(family),
                    IptablesModeName(choice.mode), choice.reason);
      slot = choice.mode;
    }
    return *slot;
  }

  Status Forward(const Config& config) override {
    std::vector<net::Family> done;
    // A later family failing must not leave the earlier family's rules behind.
    ScopeGuard rollback([&] {
      for (auto family : done) {
        Status s = TeardownFamily(family, ModeOf(family), config.network_name, config.container_id);
        if (!s.ok())
          spdlog::warn("rollback of the IPv{} rules failed: {}", Digit(family), s.error().msg);
      }
    });
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(family)) continue;
      const Plan plan = ipt::BuildPlan(config, family);
      NG_RETURN_IF_ERROR(Transact(
          family, ModeOf(family), [&](ipt::NatTable& table) { return ApplyPlan(table, plan); },
          ChainsRead(plan)));
      done.push_back(family);
    }
    rollback.Dismiss();
    return OkStatus();
  }

  Status Check(const Config& config) override {
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(family)) continue;
      const Plan plan = ipt::BuildPlan(config, family);
      // A read-only transaction: the change reports nothing to commit.
      Status found = OkStatus();
      NG_RETURN_IF_ERROR(Transact(
          family, ModeOf(family),
          [&](ipt::NatTable& table) -> Result<bool> {
            found = CheckPlan(table, plan);
            return false;
          },
          ChainsRead(plan)));
      NG_RETURN_IF_ERROR(found);
    }
    return OkStatus();
  }

  Status Unforward(const Config& config) override {
    int usable = 0;
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      const IptablesMode mode = ModeOf(family);
      if (ModeUsable(family, mode)) {
        NG_RETURN_IF_ERROR(TeardownFamily(family, mode, config.network_name, config.container_id));
        ++usable;
      } else {
        spdlog::info("IPv{} table nat ({}) unavailable, nothing to remove", Digit(family),
                     IptablesModeName(mode));
      }
      // The other mode's rules of this container (a node that switched modes).
      if (ModeHasLayout(family, Other(mode))) {
        NG_RETURN_IF_ERROR(
            TeardownFamily(family, Other(mode), config.network_name, config.container_id));
        ++usable;
      }
    }
    if (usable == 0) {
      return Error(kErrKernel, "table nat is usable in neither family");
    }
    return OkStatus();
  }

  Status Gc(const std::string& network_name, const std::set<std::string>& valid) override {
    std::string errors;
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      for (const auto mode : {IptablesMode::kNft, IptablesMode::kLegacy}) {
        if (!ModeHasLayout(family, mode)) continue;
        Status s = Transact(family, mode, [&](ipt::NatTable& table) -> Result<bool> {
          NG_ASSIGN_OR_RETURN(auto owners, table.EntryOwners());
          std::set<std::string> stale;
          for (const auto& [chain, owner] : owners) {
            if (owner.network_name == network_name && valid.count(owner.container_id) == 0) {
              spdlog::info("gc: removing {} mappings of container {}", table.name(),
                           owner.container_id);
              stale.insert(chain);
            }
          }
          return RemoveChains(table, ipt::kDnatChain, stale);
        });
        if (!s.ok()) errors += (errors.empty() ? "" : "; ") + s.error().msg;
      }
    }
    if (!errors.empty()) return Error(kErrKernel, errors);
    return OkStatus();
  }

  Status Usable() override {
    const IptablesMode mode = ModeOf(net::Family::kV4);
    if (!ModeUsable(net::Family::kV4, mode)) {
      return Error(kErrPluginNotAvailable, "iptables (" + std::string(IptablesModeName(mode)) +
                                               "): table nat is not usable");
    }
    return OkStatus();
  }

 private:
  static int Digit(net::Family family) { return family == net::Family::kV4 ? 4 : 6; }

  // CHECK: every object of the plan is in `table`; error 103 names the first missing one.
  static Status CheckPlan(ipt::NatTable& table, const Plan& plan) {
    auto missing = [&](const std::string& what) {
      return Error(kErrCheckFailed, table.name() + " table nat: " + what);
    };
    for (const auto& chain : plan.shared_chains) {
      if (!table.HasChain(chain)) return missing("chain " + chain + " not found");
    }
    auto has = [&](const std::string& chain, const Rule& rule) -> Result<bool> {
      if (!table.HasChain(chain)) return false;
      return table.HasRule(chain, rule);
    };
    for (const auto& shared : plan.shared_rules) {
      NG_ASSIGN_OR_RETURN(bool found, has(shared.chain, shared.rule));
      if (!found) {
        return missing("rule \"-A " + shared.chain + " " + shared.rule.ToString() + "\" not found");
      }
    }
    if (!table.HasChain(plan.container_chain)) {
      return missing("chain " + plan.container_chain + " not found");
    }
    for (const auto& rule : plan.container_rules) {
      NG_ASSIGN_OR_RETURN(bool found, has(plan.container_chain, rule));
      if (!found) {
        return missing("rule \"-A " + plan.container_chain + " " + rule.ToString() +
                       "\" not found");
      }
    }
    for (const auto& rule : plan.entry_rules) {
      NG_ASSIGN_OR_RETURN(bool found, has(ipt::kDnatChain, rule));
      if (!found) {
        return missing("rule \"-A " + std::string(ipt::kDnatChain) + " " + rule.ToString() +
                       "\" not found");
      }
    }
    return OkStatus();
  }

  std::optional<IptablesMode> configured_;  // "iptablesMode"
  std::optional<IptablesMode> mode4_, mode6_;
};

}  // namespace

std::unique_ptr<PortMapper> MakeIptablesMapper(std::optional<IptablesMode> mode) {
  return std::make_unique<IptablesMapper>(mode);
}

}  // namespace nodegate::portmap
