#pragma once
// NodePorts (pkg/scheduler/framework/plugins/nodeports/node_ports.go): a pod fits when none of
// its host ports conflicts with a host port already used on the node (host_port_set.h has the
// conflict rule). A pod without host ports always fits (upstream PreFilter returns Skip).

#include <string>
#include <string_view>
#include <vector>

#include "admit/framework/host_port_set.h"
#include "admit/framework/predicate.h"

namespace nodegate::admit::node_ports {

inline constexpr std::string_view kName = "NodePorts";
inline constexpr std::string_view kErrReason =
    "node(s) didn't have free ports for the requested pod ports";

// PortConflict: a wanted port and the entry already holding it.
struct PortConflict {
  WantedPort wanted;
  HostPortSet::Entry holder;
};

// FindConflicts: every wanted port that is taken, with its holder.
std::vector<PortConflict> FindConflicts(const std::vector<WantedPort>& wanted,
                                        const HostPortSet& used);

// Fits: no conflict (nodeports.Fits).
bool Fits(const std::vector<WantedPort>& wanted, const HostPortSet& used);

// ExplainConflict: "hostPort 8080/TCP on 0.0.0.0 (container "dns") is held by pod
// kube-system/web-node1, container "web" (8080/TCP on 0.0.0.0) from
// /etc/kubernetes/manifests/web.yaml"
std::string ExplainConflict(const PortConflict& conflict);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::node_ports
