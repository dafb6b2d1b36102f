#pragma once
// DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go,
// pkg/scheduler/framework/preemption/preemption.go), as far as it can be done without the
// cluster's PodDisruptionBudgets:
//   - a pod with preemptionPolicy Never is not eligible;
//   - only nodes whose Filter status was Unschedulable are tried (UnschedulableAndUnresolvable:
//     "Preemption is not helpful for scheduling");
//   - on each, every pod of lower priority is taken off; no such pod: "No preemption victims
//     found for incoming pod"; still no fit: that Filter status; else the victims are put back
//     one by one, most important first (higher priority, then earlier start), and those that
//     make the pod fail again stay victims;
//   - of the nodes with victims the scheduler nominates one by: fewest PDB violations, lowest
//     highest victim priority, lowest sum of victim priorities, fewest victims, latest start
//     of the highest-priority victims.
// Not modelled, and said in the report: PodDisruptionBudgets (every victim counts as not
// violating one), victims already terminating on the nominated node, extenders, and the
// scheduler's sampling of candidates (at least 100 nodes or 10%, from a random offset) when
// more nodes qualify.

#include <functional>
#include <vector>

#include "admit/framework/node_info.h"
#include "explain/scheduler/explanation.h"
#include "explain/scheduler/fit_error.h"

namespace nodegate::explain {

class Scheduler;
struct CandidatePod;

// PreemptionScope: the nodes of the cluster, each as preemption starts from it (the candidate
// itself left out), with its Filter verdict.
struct PreemptionScope {
  size_t num_all_nodes = 0;
  std::vector<const NodeVerdict*> verdicts;  // the nodes the Filters ran on
  std::function<const admit::NodeInfo&(const std::string& node)> node;
};

// Preempt: DefaultPreemption's PostFilter outcome ("preemption: ..." when it cannot help,
// success when some node can be freed), and what it found in `report`.
PluginOutcome Preempt(const Scheduler& scheduler, const CandidatePod& candidate,
                      const admit::PodInfo& pod, const PreemptionScope& scope, Preemption& report);

// MoreImportant: util.MoreImportantPod on facts (priority, then the earlier start; a pod not
// started yet counts as starting now).
bool MoreImportant(const admit::PodFacts& a, const admit::PodFacts& b);

}  // namespace nodegate::explain
