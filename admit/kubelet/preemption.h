#pragma once
// Critical-pod admission (pkg/kubelet/preemption/preemption.go, the kubelet's
// AdmissionFailureHandler): when a critical pod fails admission and every failure is an
// insufficient resource, the kubelet evicts pods to free the missing amounts and admits it.
//
// Who is critical (pkg/kubelet/types/pod_update.go IsCriticalPod): a static pod
// (kubernetes.io/config.source other than "api"), a mirror pod, or spec.priority of at least
// 2000000000 (system-cluster-critical). Who may be evicted (Preemptable): a non-critical pod,
// or a pod whose priority is lower than the preemptor's when both have one.
//
// Which pods (getPodsToPreempt): the candidates are split by QoS class. Guaranteed pods are
// picked only for what all BestEffort and Burstable pods together cannot free, Burstable pods
// only for what all BestEffort pods and the Guaranteed picks cannot free, BestEffort pods for
// the rest. Within a class the pick is greedy: the pod whose requests leave the smallest
// "distance" to the remaining requirements (sum over requirements of the squared fraction still
// missing), ties going to the pod with the smaller memory, then cpu, request (the later pod in
// the list when they are equal). Requests are spec requests (GetResourceRequest): containers
// summed, init containers as a peak, pod-level requests when set, overhead only on a non-zero
// total; every pod frees exactly 1 of "pods".
//
//   auto victims = PodsToPreempt(candidate, MakePreemptees(node.pods()), reqs);

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/node_info.h"
#include "admit/framework/pod_facts.h"
#include "admit/framework/resource.h"
#include "admit/framework/status.h"
#include "admit/kubelet/qos.h"
#include "lib/base/result.h"

namespace nodegate::admit::kubelet {

// SystemCriticalPriority (pkg/apis/scheduling): priorities at or above it are critical.
inline constexpr int32_t kSystemCriticalPriority = 2000000000;

// CriticalReason: why the kubelet treats the pod as critical ("static pod", "mirror pod",
// "priority 2000001000"), or "" when it does not.
std::string CriticalReason(const Pod& pod);
inline bool IsCriticalPod(const Pod& pod) { return !CriticalReason(pod).empty(); }

// Preemptable: may `preemptor` evict `preemptee` (a pod on the node)?
bool Preemptable(const Pod& preemptor, const PodFacts& preemptee);

// ResourceRequest: what the kubelet counts a pod as freeing of one resource, in comparison
// units (cpu in millicores): GetResourceRequest.
int64_t ResourceRequest(const Pod& pod, std::string_view resource, const FeatureGates& gates);
// EvictionFrees: ResourceRequest of every resource the pod requests, at once (pods left out:
// every pod frees exactly 1).
Resource EvictionFrees(const Pod& pod, const FeatureGates& gates);

// AdmissionRequirement: an amount of a resource still to be freed.
struct AdmissionRequirement {
  std::string resource;
  int64_t quantity = 0;

  friend bool operator==(const AdmissionRequirement&, const AdmissionRequirement&) = default;
};
using AdmissionRequirements = std::vector<AdmissionRequirement>;

// RequirementFor: the shortfall of one insufficient resource: requested - (capacity - used).
AdmissionRequirement RequirementFor(const InsufficientResource& insufficient);

// RequirementsToString: "[(res: cpu, q: 500), ]", the kubelet's rendering in its error.
std::string RequirementsToString(const AdmissionRequirements& requirements);

// Preemptee: a pod on the node that the kubelet may pick, with its QoS class and what evicting
// it frees (PodFacts, computed when it joined the node).
struct Preemptee {
  PodFactsPtr pod;

  QosClass qos() const { return pod->qos; }
  int64_t Request(std::string_view resource) const;
};

std::vector<Preemptee> MakePreemptees(const std::vector<PodFactsPtr>& pods);

// Subtract: what is still missing once `pods` are gone (requirements met drop out).
AdmissionRequirements Subtract(const AdmissionRequirements& requirements,
                               const std::vector<Preemptee>& pods);
// Distance: how far evicting `pod` leaves the requirements from being met (0 = met).
double Distance(const AdmissionRequirements& requirements, const Preemptee& pod);

// PodsToPreempt: the pods the kubelet evicts for `preemptor`, BestEffort ones first, then
// Burstable, then Guaranteed. Error (the kubelet's text) when all preemptable pods together
// cannot free the requirements: "no set of running pods found to reclaim resources: [...]".
Result<std::vector<Preemptee>> PodsToPreempt(const Pod& preemptor,
                                             const std::vector<Preemptee>& pods,
                                             const AdmissionRequirements& requirements);

}  // namespace nodegate::admit::kubelet
