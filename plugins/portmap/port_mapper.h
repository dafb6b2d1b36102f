#pragma once
// The seam between the plugin's verbs and the kernel: one implementation per backend
// (the iptables layout through libiptc or nf_tables netlink, nftables through nf_tables netlink).
// Every method takes a validated
// Config and changes nothing when it fails (each backend applies one transaction per table).

#include <memory>
#include <set>
#include <string>

#include "lib/base/result.h"
#include "plugins/portmap/config.h"

namespace nodegate::portmap {

namespace ipt {
class NatTables;  // iptables/nat_tables.h
}
}  // namespace nodegate::portmap

namespace nodegate::netfilter {
class Ruleset;  // lib/netfilter/ruleset.h
}

namespace nodegate::portmap {

class PortMapper {
 public:
  virtual ~PortMapper() = default;

  // ADD: installs the container's mappings, replacing what an earlier ADD of the same
  // (network, container) installed. Errors: 100 kernel, 102 host port taken (nftables).
  virtual Status Forward(const Config& config) = 0;
  // CHECK: every object Forward would install exists. Error 103 names the first missing one.
  virtual Status Check(const Config& config) = 0;
  // DEL: removes this (network, container)'s mappings; success when there are none.
  virtual Status Unforward(const Config& config) = 0;
  // GC: removes mappings of `network_name` whose container is not in `valid_container_ids`.
  virtual Status Gc(const std::string& network_name,
                    const std::set<std::string>& valid_container_ids) = 0;
  // Whether this backend can work in the current network namespace (STATUS, auto-detect).
  virtual Status Usable() = 0;
};

// `mode`: the config's "iptablesMode"; nullopt chooses the node's (iptables/mode.h).
std::unique_ptr<PortMapper> MakeIptablesMapper(std::optional<IptablesMode> mode = std::nullopt);
// The same on `tables` instead of the kernel's (a fake in unit tests); `tables` outlives it.
std::unique_ptr<PortMapper> MakeIptablesMapper(std::optional<IptablesMode> mode,
                                               ipt::NatTables& tables);
std::unique_ptr<PortMapper> MakeNftablesMapper();
// The same on `ruleset` instead of the kernel's (a fake in unit tests); `ruleset` outlives it.
std::unique_ptr<PortMapper> MakeNftablesMapper(netfilter::Ruleset& ruleset);

}  // namespace nodegate::portmap
