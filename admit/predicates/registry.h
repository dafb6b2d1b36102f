#pragma once
// The in-tree predicates and the scheduler profile's filter order
// (pkg/scheduler/apis/config/v1/default_plugins.go, the node-local subset).

#include <array>
#include <string_view>
#include <vector>

#include "admit/framework/registry.h"

namespace nodegate::admit {

inline constexpr std::array<std::string_view, 6> kSchedulerFilterOrder = {
    "NodeUnschedulable", "NodeName",  "TaintToleration",
    "NodeAffinity",      "NodePorts", "NodeResourcesFit",
};

// NewInTreeRegistry: every predicate of admit/predicates/.
Registry NewInTreeRegistry();

// NewSchedulerProfile: the predicates of kSchedulerFilterOrder, in order.
std::vector<PredicatePtr> NewSchedulerProfile(const PredicateOptions& options);

}  // namespace nodegate::admit
