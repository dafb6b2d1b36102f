// The iptables backend: libiptc on table nat, one commit per family per call, under the
// xtables lock the iptables tools take, so concurrent `iptables` users lose nothing.
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
#include "lib/sys/fd.h"
#include "lib/sys/file_lock.h"
#include "plugins/portmap/iptables_encode.h"
#include "plugins/portmap/iptables_rules.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using ipt::Plan;
using ipt::Rule;

constexpr char kXtablesLock[] = "/run/xtables.lock";
constexpr int kCommitAttempts = 3;

// libiptc and libip6tc have the same API under two prefixes; Ops hides the difference.
struct Ops {
  net::Family family;
  xtc_handle* (*init)(const char*);
  void (*free)(xtc_handle*);
  int (*is_chain)(const char*, xtc_handle* const);
  int (*create_chain)(const char*, xtc_handle*);
  int (*flush_entries)(const char*, xtc_handle*);
  int (*delete_chain)(const char*, xtc_handle*);
  int (*delete_num_entry)(const char*, unsigned int, xtc_handle*);
  int (*commit)(xtc_handle*);
  const char* (*strerror)(int);
  // Entry access through untyped pointers (ipt_entry vs ip6t_entry).
  const uint8_t* (*first_rule)(const char*, xtc_handle*);
  const uint8_t* (*next_rule)(const uint8_t*, xtc_handle*);
  const char* (*get_target)(const uint8_t*, xtc_handle*);
  int (*append)(const char*, const uint8_t*, xtc_handle*);
  int (*insert)(const char*, const uint8_t*, unsigned int, xtc_handle*);
  const char* name;  // "iptables" / "ip6tables" in messages
};

const Ops kOps4 = {
    net::Family::kV4,
    iptc_init,
    iptc_free,
    iptc_is_chain,
    iptc_create_chain,
    iptc_flush_entries,
    iptc_delete_chain,
    iptc_delete_num_entry,
    iptc_commit,
    iptc_strerror,
    [](const char* c, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(iptc_first_rule(c, h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(
          iptc_next_rule(reinterpret_cast<const ipt_entry*>(e), h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return iptc_get_target(reinterpret_cast<const ipt_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, xtc_handle* h) {
      return iptc_append_entry(c, reinterpret_cast<const ipt_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, unsigned int n, xtc_handle* h) {
      return iptc_insert_entry(c, reinterpret_cast<const ipt_entry*>(e), n, h);
    },
    "iptables",
};

const Ops kOps6 = {
    net::Family::kV6,
    ip6tc_init,
    ip6tc_free,
    ip6tc_is_chain,
    ip6tc_create_chain,
    ip6tc_flush_entries,
    ip6tc_delete_chain,
    ip6tc_delete_num_entry,
    ip6tc_commit,
    ip6tc_strerror,
    [](const char* c, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(ip6tc_first_rule(c, h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(
          ip6tc_next_rule(reinterpret_cast<const ip6t_entry*>(e), h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return ip6tc_get_target(reinterpret_cast<const ip6t_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, xtc_handle* h) {
      return ip6tc_append_entry(c, reinterpret_cast<const ip6t_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, unsigned int n, xtc_handle* h) {
      return ip6tc_insert_entry(c, reinterpret_cast<const ip6t_entry*>(e), n, h);
    },
    "ip6tables",
};

const Ops& OpsFor(net::Family family) { return family == net::Family::kV4 ? kOps4 : kOps6; }

// One snapshot of table nat; changes are buffered until Commit().
class Table {
 public:
  static Result<Table> Open(const Ops& ops) {
    xtc_handle* h = ops.init(ipt::kTable);
    if (h == nullptr) {
      const int err = errno;
      return Error(kErrKernel,
                   std::string(ops.name) + ": cannot read table nat: " + ops.strerror(err));
    }
    return Table(ops, h);
  }
  Table(Table&& other) noexcept : ops_(other.ops_), h_(std::exchange(other.h_, nullptr)) {}
  Table& operator=(Table&&) = delete;
  ~Table() {
    if (h_ != nullptr) ops_->free(h_);
  }

  const Ops& ops() const { return *ops_; }
  bool HasChain(const std::string& chain) const { return ops_->is_chain(chain.c_str(), h_); }

  Status Fail(const std::string& what) const {
    const int err = errno;
    return Error(kErrKernel, std::string(ops_->name) + ": " + what + ": " + ops_->strerror(err));
  }

  Status CreateChain(const std::string& chain) {
    if (!ops_->create_chain(chain.c_str(), h_)) return Fail("create chain " + chain);
    return OkStatus();
  }

  bool HasRule(const std::string& chain, const Rule& rule) const {
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

  Status Append(const std::string& chain, const Rule& rule) {
    const auto blob = ipt::EncodeRule(rule, ops_->family);
    if (!ops_->append(chain.c_str(), blob.data(), h_)) {
      return Fail("append to " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  Status InsertFirst(const std::string& chain, const Rule& rule) {
    const auto blob = ipt::EncodeRule(rule, ops_->family);
    if (!ops_->insert(chain.c_str(), blob.data(), 0, h_)) {
      return Fail("insert into " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  // Deletes every rule of `chain` that jumps to one of `targets`.
  Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) {
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

  Status Flush(const std::string& chain) {
    if (!ops_->flush_entries(chain.c_str(), h_)) return Fail("flush chain " + chain);
    return OkStatus();
  }

  Status DeleteChain(const std::string& chain) {
    if (!ops_->delete_chain(chain.c_str(), h_)) return Fail("delete chain " + chain);
    return OkStatus();
  }

  // The owners of the entry rules in CNI-HOSTPORT-DNAT: jump target -> comment owner.
  std::map<std::string, ipt::CommentOwner> EntryOwners() const {
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
  Table(const Ops& ops, xtc_handle* h) : ops_(&ops), h_(h) {}
  const Ops* ops_;
  xtc_handle* h_;
  int commit_errno_ = 0;
};

// Runs `change` on a fresh snapshot under the xtables lock and commits it when it reports a
// change. A commit that raced with a writer that ignores the lock (EAGAIN) is retried on a
// new snapshot.
Status Transact(const Ops& ops, const std::function<Result<bool>(Table&)>& change) {
  NG_ASSIGN_OR_RETURN(auto lock, sys::FileLock::Acquire(kXtablesLock));
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(Table table, Table::Open(ops));
    NG_ASSIGN_OR_RETURN(const bool changed, change(table));
    if (!changed) return OkStatus();
    Status committed = table.Commit();
    if (committed.ok() || table.commit_errno() != EAGAIN || attempt == kCommitAttempts) {
      return committed;
    }
    spdlog::info("{}: table nat changed during commit, retrying", ops.name);
  }
}

Result<bool> ApplyPlan(Table& table, const Plan& plan) {
  for (const auto& chain : plan.shared_chains) {
    if (!table.HasChain(chain)) NG_RETURN_IF_ERROR(table.CreateChain(chain));
  }
  for (const auto& shared : plan.shared_rules) {
    if (table.HasRule(shared.chain, shared.rule)) continue;
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
Result<bool> RemoveChains(Table& table, const std::string& parent,
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

// Removes the container's chains in one family: one snapshot under the xtables lock, and a
// commit only when there is something to remove (reading the table is a large part of the
// cost with thousands of rules, so it is read once).
Status TeardownFamily(const Ops& ops, const std::string& network, const std::string& id) {
  const std::string dnat_chain = ipt::ContainerChainName(network, id);
  const std::string snat_chain = ipt::LegacySnatChainName(network, id);
  return Transact(ops, [&](Table& table) -> Result<bool> {
    NG_ASSIGN_OR_RETURN(bool dnat, RemoveChains(table, ipt::kDnatChain, {dnat_chain}));
    // The chain of plugins older than 0.8 (SNAT for hairpin), removed like the reference does.
    NG_ASSIGN_OR_RETURN(bool snat, RemoveChains(table, ipt::kLegacySnatChain, {snat_chain}));
    return dnat || snat;
  });
}

// Whether table nat of the family answers, from its header alone (IPT_SO_GET_INFO, a few
// hundred bytes; opening a snapshot copies the whole table, about 6 ms per 1,000 mappings, and
// auto-detection runs on every call). The kernel loads iptable_nat for this request when
// needed, as it does for libiptc's.
template <typename Info>
bool TableAnswers(int domain, int level, int option) {
  sys::UniqueFd fd(::socket(domain, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
  if (!fd.valid()) return false;
  Info info{};
  std::strncpy(info.name, ipt::kTable, sizeof(info.name) - 1);
  socklen_t len = sizeof(info);
  return ::getsockopt(fd.get(), level, option, &info, &len) == 0;
}

bool FamilyUsable(const Ops& ops) {
  return ops.family == net::Family::kV4
             ? TableAnswers<ipt_getinfo>(AF_INET, IPPROTO_IP, IPT_SO_GET_INFO)
             : TableAnswers<ip6t_getinfo>(AF_INET6, IPPROTO_IPV6, IP6T_SO_GET_INFO);
}

class IptablesMapper : public PortMapper {
 public:
  Status Forward(const Config& config) override {
    std::vector<net::Family> done;
    // A later family failing must not leave the earlier family's rules behind.
    ScopeGuard rollback([&] {
      for (auto family : done) {
        if (Status s = TeardownFamily(OpsFor(family), config.network_name, config.container_id);
            !s.ok()) {
          spdlog::warn("rollback of {} rules failed: {}", OpsFor(family).name, s.error().msg);
        }
      }
    });
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(family)) continue;
      const Plan plan = ipt::BuildPlan(config, family);
      NG_RETURN_IF_ERROR(
          Transact(OpsFor(family), [&](Table& table) { return ApplyPlan(table, plan); }));
      done.push_back(family);
    }
    rollback.Dismiss();
    return OkStatus();
  }

  Status Check(const Config& config) override {
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(family)) continue;
      const Ops& ops = OpsFor(family);
      const Plan plan = ipt::BuildPlan(config, family);
      NG_ASSIGN_OR_RETURN(Table table, Table::Open(ops));
      auto missing = [&](const std::string& what) {
        return Error(kErrCheckFailed, std::string(ops.name) + " table nat: " + what);
      };
      for (const auto& chain : plan.shared_chains) {
        if (!table.HasChain(chain)) return missing("chain " + chain + " not found");
      }
      for (const auto& shared : plan.shared_rules) {
        if (!table.HasRule(shared.chain, shared.rule)) {
          return missing("rule \"-A " + shared.chain + " " + shared.rule.ToString() +
                         "\" not found");
        }
      }
      if (!table.HasChain(plan.container_chain)) {
        return missing("chain " + plan.container_chain + " not found");
      }
      for (const auto& rule : plan.container_rules) {
        if (!table.HasRule(plan.container_chain, rule)) {
          return missing("rule \"-A " + plan.container_chain + " " + rule.ToString() +
                         "\" not found");
        }
      }
      for (const auto& rule : plan.entry_rules) {
        if (!table.HasRule(ipt::kDnatChain, rule)) {
          return missing("rule \"-A " + std::string(ipt::kDnatChain) + " " + rule.ToString() +
                         "\" not found");
        }
      }
    }
    return OkStatus();
  }

  Status Unforward(const Config& config) override {
    int usable = 0;
    for (const Ops* ops : {&kOps4, &kOps6}) {
      Status s = TeardownFamily(*ops, config.network_name, config.container_id);
      if (!s.ok() && s.error().msg.find("cannot read table nat") != std::string::npos) {
        spdlog::info("{}: table nat unavailable, nothing to remove", ops->name);
        continue;
      }
      NG_RETURN_IF_ERROR(s);
      ++usable;
    }
    if (usable == 0) {
      return Error(kErrKernel, "neither iptables nor ip6tables is usable");
    }
    return OkStatus();
  }

  Status Gc(const std::string& network_name, const std::set<std::string>& valid) override {
    std::string errors;
    for (const Ops* ops : {&kOps4, &kOps6}) {
      if (!FamilyUsable(*ops)) continue;
      Status s = Transact(*ops, [&](Table& table) -> Result<bool> {
        std::set<std::string> stale;
        for (const auto& [chain, owner] : table.EntryOwners()) {
          if (owner.network_name == network_name && valid.count(owner.container_id) == 0) {
            spdlog::info("gc: removing {} mappings of container {}", ops->name, owner.container_id);
            stale.insert(chain);
          }
        }
        return RemoveChains(table, ipt::kDnatChain, stale);
      });
      if (!s.ok()) errors += (errors.empty() ? "" : "; ") + s.error().msg;
    }
    if (!errors.empty()) return Error(kErrKernel, errors);
    return OkStatus();
  }

  Status Usable() override {
    if (!FamilyUsable(kOps4)) {
      return Error(kErrPluginNotAvailable, "iptables: table nat is not usable (libiptc)");
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<PortMapper> MakeIptablesMapper() { return std::make_unique<IptablesMapper>(); }

}  // namespace nodegate::portmap
