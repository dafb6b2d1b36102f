#pragma once
// The DaemonSet controller's rule (pkg/controller/daemon/daemon_controller.go
// NodeShouldRunDaemonPod, util/daemonset_util.go) and, where it says a daemon pod should run
// but none runs, the scheduler's verdict for that pod on that node:
//   - the would-be pod is the template with the tolerations the controller adds to every
//     daemon pod (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and
//     unschedulable NoSchedule; network-unavailable NoSchedule for hostNetwork);
//   - it should run on a node when the template's nodeName is empty or the node's, its node
//     selector and required node affinity match the node, and no NoSchedule or NoExecute taint
//     goes untolerated; a pod already there may stay when only NoSchedule taints are untolerated;
//   - the pod the controller creates names its node (required node affinity on metadata.name,
//     replacing the template's terms), and the scheduler places it: its Filters, with the
//     holders of ports and the consumers of resources, say why it does not run.
//
//   auto e = ExplainDaemonSet(daemonset_json, cluster, scheduler);

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "explain/cluster/cluster.h"
#include "explain/scheduler/explanation.h"
#include "explain/scheduler/scheduler.h"
#include "lib/base/result.h"

namespace nodegate::explain {

struct DaemonSetNode {
  enum class State {
    kRuns,          // should run, and its pod is bound there
    kBlocked,       // should run, and its pod cannot be placed there
    kWouldFit,      // should run, no pod is bound there yet, and it would fit
    kNotWanted,     // should not run there
    kRunsUnwanted,  // should not run there, yet a pod of it is bound there
  };
  std::string node;
  State state = State::kNotWanted;
  bool should_continue_running = true;  // a running pod may stay (no untolerated NoExecute)
  std::string why_not;                  // the controller's reason, when it should not run
  std::vector<std::string> pods;        // its pods bound there: "ns/name (Phase)"
  std::string pending_pod;              // its pod waiting to be placed there, if any
  std::optional<NodeVerdict> verdict;   // the scheduler's, when it should run and does not
  std::optional<std::string> summary;   // the waiting pod's FitError line
  std::vector<Victim> victims;          // when preemption would make room there
};

struct DaemonSetExplanation {
  std::string daemonset;  // NAMESPACE/NAME
  bool host_network = false;
  std::vector<std::string> host_ports;  // "53/UDP on 0.0.0.0"
  std::vector<DaemonSetNode> nodes;
  size_t desired = 0;  // nodes it should run on
  size_t running = 0;
  size_t blocked = 0;
  size_t waiting = 0;                      // should run, no pod yet, would fit
  std::vector<std::string> not_evaluated;  // Filters its pods need that nodegate does not run
  std::vector<std::string> notes;
};

Result<DaemonSetExplanation> ExplainDaemonSet(const nlohmann::json& daemonset,
                                              const Cluster& cluster, const Scheduler& scheduler);

// DaemonPodFor: the pod the controller creates for `node` (a Pod object): the template, its
// tolerations, and the node pinned by required affinity. `node` "" leaves the affinity as the
// template has it (the controller's own check uses that pod).
nlohmann::json DaemonPodFor(const nlohmann::json& daemonset, const std::string& node);

// PinnedNode: the node a daemon pod's required affinity names (metadata.name In [one]), or "".
std::string PinnedNode(const nlohmann::json& pod);

}  // namespace nodegate::explain
