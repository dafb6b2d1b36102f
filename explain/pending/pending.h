#pragma once
// ExplainPending: every Pending pod the scheduler has to place (not bound, not terminal),
// explained one by one, then grouped by what blocks it, with the holders aggregated across
// nodes: "host port 53/UDP: held on 3 nodes by pods of DaemonSet kube-system/node-local-dns".

#include <string>
#include <vector>

#include "explain/cluster/cluster.h"
#include "explain/scheduler/explanation.h"
#include "explain/scheduler/scheduler.h"

namespace nodegate::explain {

struct BlockedPod {
  std::string pod;
  size_t nodes = 0;  // nodes it fails on for this reason
  size_t tried = 0;  // nodes the scheduler tries for it
};

struct Blocker {
  std::string what;    // "host port 53/UDP", "Insufficient cpu", "taint a=b:NoSchedule", ...
  std::string detail;  // "held on 3 nodes by pods of DaemonSet kube-system/node-local-dns"
  std::vector<BlockedPod> pods;
};

struct PendingReport {
  std::string scope;  // "all namespaces" or "namespace NS"
  std::vector<PodExplanation> pods;
  std::vector<Blocker> blockers;  // the most pods first
  size_t fit_nowhere = 0;
  size_t fit_now = 0;  // would fit now (the scheduler has not bound them yet, or cannot see why)
  std::vector<std::string> unreadable;  // pending pods nodegate could not decode
};

// ExplainPending: the Pending pods of `ns` ("" for every namespace).
PendingReport ExplainPending(const Cluster& cluster, const Scheduler& scheduler,
                             const std::string& ns);

}  // namespace nodegate::explain
