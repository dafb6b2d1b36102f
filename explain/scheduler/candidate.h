#pragma once
// CandidatePod: the pod `explain` places, decoded by admit's decoder (what the predicates
// read), with what of its spec the predicates do not read but the scheduler does: its
// scheduler, scheduling gates, preemption policy and nominated node, and the Filters it needs
// that nodegate does not evaluate (inter-pod affinity, topology spread, volumes, dynamic
// resources). Such a pod gets per-node verdicts of nodegate's Filters, never a summary line
// that claims to be the scheduler's.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "explain/cluster/cluster.h"
#include "lib/base/result.h"

namespace nodegate::explain {

inline constexpr std::string_view kDefaultScheduler = "default-scheduler";

struct CandidatePod {
  admit::Pod pod;
  std::string scheduler_name;  // spec.schedulerName ("" is default-scheduler)
  std::vector<std::string> scheduling_gates;
  std::string preemption_policy;  // spec.preemptionPolicy ("" is PreemptLowerPriority)
  std::string nominated_node;     // status.nominatedNodeName
  // Filters of the default profile the pod needs and nodegate does not evaluate, each with the
  // part of the spec that needs it ("InterPodAffinity: spec.affinity.podAntiAffinity ...").
  std::vector<std::string> not_evaluated;
  std::vector<std::string> notes;  // what was assumed (a priority class not known, ...)
};

// DecodeCandidate: a Pod object (from the API or a file). `where` prefixes errors.
Result<CandidatePod> DecodeCandidate(const nlohmann::json& object, std::string_view where);

// PriorityOf: spec.priority, 0 when unset (corev1helpers.PodPriority).
int32_t PriorityOf(const admit::Pod& pod);

// LabelSelectorMatches: a metav1.LabelSelector (matchLabels, matchExpressions) against labels.
// A null selector matches nothing, an empty one everything; an invalid one nothing.
bool LabelSelectorMatches(const nlohmann::json& selector,
                          const std::map<std::string, std::string>& labels);

// AntiAffinityThreats: pods on the nodes whose required anti-affinity terms may reject `pod`
// (a term whose label selector matches the pod's labels and whose namespaces include the
// pod's, or are chosen by a namespaceSelector nodegate cannot evaluate), described for
// `not_evaluated`; at most `limit` named, then a count.
std::vector<std::string> AntiAffinityThreats(const Cluster& cluster, const admit::Pod& pod,
                                             size_t limit = 3);

}  // namespace nodegate::explain
