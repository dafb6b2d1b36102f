#pragma once
// Scheduler: the default kube-scheduler profile's decision for one pod over a Cluster, node
// by node, as pkg/scheduler/schedule_one.go makes it:
//   - PreFilter: NodeAffinity's (metadata.name matchFields restrict the nodes tried, or
//     conflict: "pod affinity terms conflict"), NodeResourcesFit's (sidecars with the gate off);
//   - Filter, on every node tried, with the pods nominated there of equal or higher priority
//     counted (RunFilterPluginsWithNominatedPods): nodegate's predicates in the scheduler's
//     order (admit/predicates/registry.h), each failure explained;
//   - when no node fits, PostFilter: DynamicResources (gate DynamicResourceAllocation) then
//     DefaultPreemption (scheduler/preemption.h), and the FitError line (fit_error.h).
// A pod that needs a Filter nodegate does not evaluate, names another scheduler or is gated
// gets its per-node verdicts but no summary line.
//
//   Scheduler scheduler(cluster, {gates});
//   PodExplanation e = scheduler.Explain(candidate);

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "admit/framework/feature_gates.h"
#include "admit/framework/node_info.h"
#include "admit/framework/predicate.h"
#include "explain/cluster/cluster.h"
#include "explain/scheduler/candidate.h"
#include "explain/scheduler/explanation.h"

namespace nodegate::explain {

struct SchedulerOptions {
  admit::FeatureGates gates;
};

// NominatedPod: a pending pod the scheduler has nominated to a node (status.nominatedNodeName);
// it holds room there for pods of lower priority.
struct NominatedPod {
  std::string key;
  int32_t priority = 0;
  admit::PodFactsPtr facts;
};

class Scheduler {
 public:
  Scheduler(const Cluster& cluster, SchedulerOptions options);

  PodExplanation Explain(const CandidatePod& candidate) const;

  // Filter: the profile's Filters for `pod` on one node as it is given (the first failing
  // plugin's status), and the findings that explain it.
  NodeVerdict Filter(const admit::PodInfo& pod, const admit::NodeInfo& node) const;

  // WithNominated: `node` with the pods nominated to it of priority >= `priority` (other than
  // `self`) added; `node` itself when there are none.
  const admit::NodeInfo& WithNominated(const admit::NodeInfo& node, int32_t priority,
                                       const std::string& self,
                                       std::optional<admit::NodeInfo>& scratch) const;

  const Cluster& cluster() const { return cluster_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  const Cluster& cluster_;
  SchedulerOptions options_;
  std::vector<admit::PredicatePtr> profile_;
  std::unordered_map<std::string, std::vector<NominatedPod>> nominated_;
};

// NodeNamesOfAffinity: NodeAffinity's PreFilter: the node names the required affinity
// restricts the pod to (every term naming nodes by metadata.name In; their union), nullopt
// when it does not restrict; an empty set is a conflict.
std::optional<std::vector<std::string>> NodeNamesOfAffinity(const admit::Pod& pod);

}  // namespace nodegate::explain
