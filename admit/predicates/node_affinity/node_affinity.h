#pragma once
// NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go, matching in
// component-helpers scheduling/corev1/nodeaffinity and apimachinery labels): spec.nodeSelector
// AND spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution. Terms are ORed,
// expressions and fields within a term ANDed; an empty term, or a term with an invalid
// requirement, matches nothing (the parse error is swallowed, as upstream does).

#include <string>
#include <string_view>

#include "admit/framework/predicate.h"

namespace nodegate::admit::node_affinity {

inline constexpr std::string_view kName = "NodeAffinity";
inline constexpr std::string_view kErrReasonPod =
    "node(s) didn't match Pod's node affinity/selector";

// ValidateRequirement: labels.NewRequirement's rules for a matchExpressions entry; "" when valid.
std::string ValidateLabelRequirement(const NodeSelectorRequirement& r);
// ValidateFieldRequirement: matchFields rules (metadata.name, In/NotIn, one value); "" if valid.
std::string ValidateFieldRequirement(const NodeSelectorRequirement& r);

// LabelRequirementMatches: one valid matchExpressions entry against node labels.
bool LabelRequirementMatches(const NodeSelectorRequirement& r,
                             const std::map<std::string, std::string>& labels);

// NodeSelectorMatches: the required node selector (OR of terms). `why` (optional) receives an
// explanation when it does not match.
bool NodeSelectorMatches(const NodeSelector& selector, const Node& node, std::string* why);

// PodMatchesNode: GetRequiredNodeAffinity(pod).Match(node): nodeSelector and required affinity.
bool PodMatchesNode(const Pod& pod, const Node& node, std::string* why);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::node_affinity
