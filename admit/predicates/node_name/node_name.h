#pragma once
// NodeName (pkg/scheduler/framework/plugins/nodename/node_name.go): a pod that names a node
// (spec.nodeName) fits only that node, compared exactly.

#include <string_view>

#include "admit/framework/predicate.h"

namespace nodegate::admit::node_name {

inline constexpr std::string_view kName = "NodeName";
inline constexpr std::string_view kErrReason = "node(s) didn't match the requested node name";

// Fits: spec.nodeName empty or equal to the node's name.
bool Fits(const Pod& pod, const Node& node);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::node_name
