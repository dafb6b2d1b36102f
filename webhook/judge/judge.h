#pragma once
// Judge: the webhook's answer to one AdmissionReview. A pod CREATE with spec.nodeName never
// meets the scheduler; the kubelet of that node admits or rejects it with its own checks. The
// judge runs those checks (admit's kubelet profile, through NodeStates) before the pod exists:
//
//   - allowed without a check: anything but a pod CREATE, a pod without spec.nodeName, a
//     mirror pod (kubernetes.io/config.mirror), a request from system:nodes;
//   - allowed with a warning: a node not known to the API server, a node that cannot be read
//     in time, a pod that cannot be read; a cache with no word from the API server for longer
//     than --max-cache-age (its verdict could be wrong either way: the node is not checked); a
//     pod the kubelet admits only by evicting others (the warning names them); a pod allowed
//     while the replicas' claims could not be read or written (coordinator.h);
//   - denied (403, reason = the kubelet's admitReason such as OutOfcpu or NodePorts): what the
//     kubelet would reject, with its message and which pods hold the port or use the resource.
//
// Every verdict also carries a bounded label pair for metrics (verdict, reason).

#include <functional>
#include <optional>
#include <string>

#include "webhook/claims/coordinator.h"
#include "webhook/review/review.h"
#include "webhook/state/node_states.h"

namespace nodegate::webhook {

// ReadNodeFn: one read of a node and the pods bound to it, finished by `deadline`; nullopt
// when the API server says there is no such node.
using ReadNodeFn = std::function<Result<std::optional<NodeSnapshot>>(const std::string& node,
                                                                     Clock::time_point deadline)>;

struct JudgeContext {
  NodeStates* states = nullptr;
  std::function<bool()> synced;  // the cache has listed nodes and pods
  ReadNodeFn read_node;          // the fallback until then
  // Stale: why the cache may not be trusted now (no word from the API server for too long),
  // or nullopt.
  std::function<std::optional<std::string>()> stale;
  Coordinator* coordinator = nullptr;  // null: one replica, or agreement switched off
};

struct Judgement {
  ReviewResponse response;
  std::string verdict;  // "allowed" or "denied"
  std::string reason;   // "fits", "preemption", "mirror-pod", "cache-stale", "OutOfcpu", ...
  std::string pod;      // NAMESPACE/NAME as judged ("" when the request held no pod)
  std::string node;     // spec.nodeName ("" when none)
};

Judgement Judge(const ReviewRequest& request, const JudgeContext& context,
                Clock::time_point deadline);

// DenialMessage: what the user reads after the API server's "admission webhook ... denied the
// request: ": the kubelet's verdict and our explanation.
std::string DenialMessage(const std::string& node, const admit::PodVerdict& verdict);

}  // namespace nodegate::webhook
