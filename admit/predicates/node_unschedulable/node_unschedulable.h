#pragma once
// NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go):
// a cordoned node (spec.unschedulable) takes only pods that tolerate the synthetic taint
// node.kubernetes.io/unschedulable:NoSchedule. The kubelet does not run this check.

#include <string_view>

#include "admit/framework/predicate.h"

namespace nodegate::admit::node_unschedulable {

inline constexpr std::string_view kName = "NodeUnschedulable";
inline constexpr std::string_view kErrReasonUnschedulable = "node(s) were unschedulable";
inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";

// Fits: the node is schedulable, or the pod tolerates the unschedulable taint.
bool Fits(const Pod& pod, const Node& node, bool comparison_operators);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::node_unschedulable
