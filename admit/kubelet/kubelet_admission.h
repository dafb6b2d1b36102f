#pragma once
// The kubelet's pod admission (pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit),
// in the kubelet's order:
//   1. the pod LABEL kubernetes.io/os against the kubelet's OS  ->
//   PodOSSelectorNodeLabelDoesNotMatch
//   2. spec.os.name against the kubelet's OS                    -> PodOSNotSupported
//   3. supplementalGroupsPolicy: Strict on a node without it    ->
//   SupplementalGroupsPolicyNotSupported
//   4. extended resources unknown to the node are dropped from the requests
//   5. AdmissionCheck: resources (all), node affinity, node name, node ports
//   6. NoExecute taints, except for static pods
//   7. the admission-failure handler (preemption.h): a critical pod whose every failure is an
//      insufficient resource is admitted, and the pods the kubelet evicts for it are listed;
//      when no set of pods frees enough, the rejection is UnexpectedAdmissionError; a critical
//      pod with other failures is rejected for the first of those.
// Only the first failure becomes the rejection reason and message; all are kept for the report.
// Not modelled: device-plugin allocation, the eviction manager.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/node_info.h"
#include "admit/framework/status.h"
#include "admit/kubelet/preemption.h"

namespace nodegate::admit::kubelet {

inline constexpr std::string_view kReasonOsSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch";
inline constexpr std::string_view kMessageOsSelectorMismatch =
    "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label";
inline constexpr std::string_view kReasonOsNotSupported = "PodOSNotSupported";
inline constexpr std::string_view kMessageOsNotSupported =
    "Failed to admit pod as the OS field doesn't match node OS";
inline constexpr std::string_view kReasonSupplementalGroupsPolicyNotSupported =
    "SupplementalGroupsPolicyNotSupported";
inline constexpr std::string_view kMessageSupplementalGroupsPolicyNotSupported =
    "SupplementalGroupsPolicy=Strict is not supported in this node";
inline constexpr std::string_view kReasonUnexpectedAdmissionError = "UnexpectedAdmissionError";

struct KubeletOptions {
  std::string host_os = "linux";  // the kubelet's runtime.GOOS
  FeatureGates gates;
};

// KubeletFailure: one failed check. `plugin` is the scheduler plugin name where the check is the
// scheduler's code (NodeResourcesFit, NodeAffinity, NodeName, NodePorts, TaintToleration), or
// the kubelet's own check (PodOS, SupplementalGroupsPolicy).
struct KubeletFailure {
  std::string plugin;
  std::string reason;  // upstream reason string ("Insufficient cpu", ...)
  std::string detail;
  std::string admit_reason;   // the rejection Reason this failure would produce ("OutOfcpu")
  std::string admit_message;  // and its Message
  std::optional<InsufficientResource> insufficient;  // set for NodeResourcesFit failures
};

// Eviction: a pod the kubelet evicts to admit a critical pod, and what it frees of each
// resource the node was short of (zero amounts left out).
struct Eviction {
  std::string pod;  // NAMESPACE/NAME
  QosClass qos = QosClass::kBestEffort;
  std::vector<std::pair<std::string, int64_t>> frees;  // comparison units, cpu in millicores
};

struct KubeletVerdict {
  bool admitted = true;
  std::vector<KubeletFailure> failures;  // in the kubelet's order; empty when admitted
  // Admitted by evicting pods: they, and what the node was short of, in the kubelet's order.
  std::vector<Eviction> evictions;
  AdmissionRequirements shortfall;
  std::string critical;  // CriticalReason of the candidate, when it is critical
  // The rejection (first failure): Reason and Message as the kubelet sets them.
  std::string reason;
  std::string message;
};

// PreparedNode: the node as the kubelet sees it: its kubernetes.io/os label is the kubelet's OS
// (the kubelet overrides a wrong or missing label in its cached node).
Node PrepareNode(Node node, std::string_view host_os);

// RemoveMissingExtendedResources: requests of regular and init containers for extended
// resources that the node's allocatable does not list at all are dropped.
Pod RemoveMissingExtendedResources(const Pod& pod, const Node& node);

// Admit: the candidate against the node whose NodeInfo holds the other active pods (the
// candidate's previous version must not be in it).
KubeletVerdict Admit(const Pod& candidate, const NodeInfo& node, const KubeletOptions& options);

// HandleAdmissionFailure: step 7 on a verdict with failures (the candidate as it was given,
// before step 4; `node` holds the pods that may be evicted).
// The pods' PodFacts carry what the kubelet reads of them (QoS, what each frees).
void HandleAdmissionFailure(const Pod& candidate, const NodeInfo& node, KubeletVerdict& verdict);

// InsufficientResourceMessage: "Node didn't have enough resource: cpu, requested: 500, used: 0,
// capacity: 400".
std::string InsufficientResourceMessage(const InsufficientResource& r);

}  // namespace nodegate::admit::kubelet
