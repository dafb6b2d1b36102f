// The iptables backend: the reference's rule layout in table nat, in the node's iptables mode
// (mode.h), written once against NatTable (nat_table.h) for its two writers: x_tables through
// libiptc under the xtables lock the iptables tools take (legacy/), or nf_tables in
// iptables-nft's encoding through generation-checked netlink batches (nft/). One transaction per
// family per call; concurrent iptables users lose nothing in either mode. The kernel is reached
// only through NatTables (nat_tables.h), which unit tests replace with an in-memory fake.
#include <map>
#include <memory>
#include <vector>

#include "lib/base/scope_guard.h"
#include "lib/cni/logging.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nat_table.h"
#include "plugins/portmap/iptables/nat_tables.h"
#include "plugins/portmap/iptables/rules.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using ipt::Plan;
using ipt::Rule;

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
Status TeardownFamily(ipt::NatTables& tables, net::Family family, IptablesMode mode,
                      const std::string& network, const std::string& id) {
  const std::string dnat_chain = ipt::ContainerChainName(network, id);
  const std::string snat_chain = ipt::LegacySnatChainName(network, id);
  return tables.Transact(
      family, mode,
      [&](ipt::NatTable& table) -> Result<bool> {
        NG_ASSIGN_OR_RETURN(bool dnat, RemoveChains(table, ipt::kDnatChain, {dnat_chain}));
        // The chain of plugins older than 0.8 (SNAT for hairpin), removed like the reference.
        NG_ASSIGN_OR_RETURN(bool snat, RemoveChains(table, ipt::kLegacySnatChain, {snat_chain}));
        return dnat || snat;
      },
      {dnat_chain, snat_chain});
}

IptablesMode Other(IptablesMode mode) {
  return mode == IptablesMode::kNft ? IptablesMode::kLegacy : IptablesMode::kNft;
}

class IptablesMapper : public PortMapper {
 public:
  IptablesMapper(std::optional<IptablesMode> configured, ipt::NatTables& tables)
      : configured_(configured), tables_(tables) {}

  // The mode of each family, chosen once per call (mode.h).
  IptablesMode ModeOf(net::Family family) {
    auto& slot = family == net::Family::kV4 ? mode4_ : mode6_;
    if (!slot) {
      const ModeChoice choice = tables_.ChooseMode(family, configured_);
      cni::LogDebug("portmap: IPv{} iptables layout in {} mode ({})", Digit(family),
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
        Status s = TeardownFamily(tables_, family, ModeOf(family), config.network_name,
                                  config.container_id);
        if (!s.ok())
          cni::LogWarn("rollback of the IPv{} rules failed: {}", Digit(family), s.error().msg);
      }
    });
    for (const auto family : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(family)) continue;
      const Plan plan = ipt::BuildPlan(config, family);
      NG_RETURN_IF_ERROR(tables_.Transact(
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
      NG_RETURN_IF_ERROR(tables_.Transact(
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
      if (tables_.Usable(family, mode)) {
        NG_RETURN_IF_ERROR(
            TeardownFamily(tables_, family, mode, config.network_name, config.container_id));
        ++usable;
      } else {
        cni::LogInfo("IPv{} table nat ({}) unavailable, nothing to remove", Digit(family),
                     IptablesModeName(mode));
      }
      // The other mode's rules of this container (a node that switched modes).
      if (HasLayout(family, Other(mode))) {
        NG_RETURN_IF_ERROR(
            TeardownFamily(tables_, family, Other(mode), config.network_name, config.container_id));
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
        if (!HasLayout(family, mode)) continue;
        const auto remove_stale = [&](ipt::NatTable& table) -> Result<bool> {
          NG_ASSIGN_OR_RETURN(auto owners, table.EntryOwners());
          std::set<std::string> stale;
          for (const auto& [chain, owner] : owners) {
            if (owner.network_name == network_name && valid.count(owner.container_id) == 0) {
              cni::LogInfo("gc: removing {} mappings of container {}", table.name(),
                           owner.container_id);
              stale.insert(chain);
            }
          }
          return RemoveChains(table, ipt::kDnatChain, stale);
        };
        Status s = tables_.Transact(family, mode, remove_stale, {});
        if (!s.ok()) errors += (errors.empty() ? "" : "; ") + s.error().msg;
      }
    }
    if (!errors.empty()) return Error(kErrKernel, errors);
    return OkStatus();
  }

  Status Usable() override {
    const IptablesMode mode = ModeOf(net::Family::kV4);
    if (!tables_.Usable(net::Family::kV4, mode)) {
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

  // Whether table nat of the other mode may hold this layout's rules, without creating it: a
  // node that switched modes keeps the old mode's rules until they are removed.
  bool HasLayout(net::Family family, IptablesMode mode) {
    return tables_.MayHoldChain(family, mode, ipt::kDnatChain);
  }

  std::optional<IptablesMode> configured_;  // "iptablesMode"
  ipt::NatTables& tables_;
  std::optional<IptablesMode> mode4_, mode6_;
};

}  // namespace

std::unique_ptr<PortMapper> MakeIptablesMapper(std::optional<IptablesMode> mode) {
  return std::make_unique<IptablesMapper>(mode, ipt::RealNatTables());
}

std::unique_ptr<PortMapper> MakeIptablesMapper(std::optional<IptablesMode> mode,
                                               ipt::NatTables& tables) {
  return std::make_unique<IptablesMapper>(mode, tables);
}

}  // namespace nodegate::portmap
