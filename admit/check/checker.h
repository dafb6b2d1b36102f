#pragma once
// Checker: admission of candidate pods, in order, on one node holding existing pods, with the
// scheduler or the kubelet profile. Every admitted candidate joins the node, so candidates that
// conflict with each other are caught. A candidate replaces the pod with the same
// NAMESPACE/NAME (its previous version) instead of conflicting with it; when it is rejected the
// previous version stays.
//
//   Checker checker(node, {Profile::kScheduler, gates});
//   checker.AddExistingPods(pods);
//   PodVerdict v = checker.CheckAndAdmit(candidate);
//
// Kubelet profile: a critical candidate admitted by evicting pods (kubelet/preemption.h) lists
// them in `evictions`; CheckAndAdmit takes them off the node before the candidate joins it.

#include <string>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/node_info.h"
#include "admit/framework/predicate.h"
#include "admit/kubelet/kubelet_admission.h"

namespace nodegate::admit {

enum class Profile { kScheduler, kKubelet };

std::string_view ProfileName(Profile profile);

struct CheckOptions {
  Profile profile = Profile::kScheduler;
  FeatureGates gates;
  std::string host_os = "linux";
};

struct FailureReport {
  std::string plugin;  // scheduler plugin name (NodePorts, NodeResourcesFit, ...)
  std::string reason;  // upstream reason string
  std::string detail;  // what caused it
};

struct PodVerdict {
  std::string pod;     // NAMESPACE/NAME
  std::string source;  // file it came from
  bool admitted = true;
  std::string code;  // scheduler status code name ("Unschedulable", ...), empty when admitted
  std::vector<FailureReport> failures;
  std::string admit_reason;        // kubelet rejections only
  std::string admit_message;       // kubelet rejections only
  bool replaced_previous = false;  // a pod with the same NAMESPACE/NAME was on the node
  // Kubelet profile, a critical candidate admitted by eviction: whom it evicts, in the
  // kubelet's order, what the node was short of, and why the candidate is critical.
  std::vector<kubelet::Eviction> evictions;
  kubelet::AdmissionRequirements shortfall;
  std::string critical;
};

// ExistingPodsSummary: what AddExistingPods kept and skipped.
struct ExistingPodsSummary {
  size_t added = 0;
  size_t replaced = 0;    // same NAMESPACE/NAME given twice: the later one counts
  size_t terminal = 0;    // Succeeded/Failed: hold nothing
  size_t other_node = 0;  // bound to another node
};

class Checker {
 public:
  Checker(Node node, CheckOptions options);

  // AddExistingPods: pods on the node. Terminal pods and pods bound to another node are skipped.
  ExistingPodsSummary AddExistingPods(std::vector<Pod> pods);
  // AddExistingPod: a pod already reduced to its facts (shared with a cache; its node is this
  // one, and it is not terminal).
  void AddExistingPod(PodFactsPtr pod);
  // RemoveExistingPod: the pod NAMESPACE/NAME left the node (deleted, finished); false when it
  // was not on it. A cache that follows the API server's watch keeps one Checker this way.
  bool RemoveExistingPod(std::string_view key) { return node_info_.RemovePod(key); }

  // Check: the verdict for one candidate; the node is left as it was.
  PodVerdict Check(const Pod& candidate);
  // CheckAndAdmit: Check, and when admitted the candidate joins the node.
  PodVerdict CheckAndAdmit(const Pod& candidate);

  const NodeInfo& node_info() const { return node_info_; }
  const CheckOptions& options() const { return options_; }

 private:
  PodVerdict Evaluate(const Pod& candidate);

  CheckOptions options_;
  NodeInfo node_info_;
  std::vector<PredicatePtr> scheduler_profile_;
};

}  // namespace nodegate::admit
