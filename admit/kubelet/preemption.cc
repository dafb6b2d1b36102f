#include "admit/kubelet/preemption.h"

#include <utility>

#include "admit/framework/resource.h"
#include "lib/base/result.h"

namespace nodegate::admit::kubelet {
namespace {

// IsPodLevelResourcesSet (component-helpers): a pod-level request or limit of cpu, memory or
// hugepages.
bool HasPodLevelResources(const Pod& pod) {
  if (!pod.pod_level_requests.has_value()) {
    return false;
  }
  for (const ResourceList* list : {&*pod.pod_level_requests, &pod.pod_level_limits}) {
    for (const auto& [name, q] : *list) {
      if (IsSupportedPodLevelResource(name)) {
        return true;
      }
    }
  }
  return false;
}

// SpecRequestsWithoutOverhead: PodRequests with ExcludeOverhead, from spec (never status):
// container requests unless pod-level resources replace them (gate on), then the pod-level
// requests of supported resources on top (whatever the gate says, as GetResourceRequestQuantity
// asks for them).
ResourceList SpecRequestsWithoutOverhead(const Pod& pod, const FeatureGates& gates) {
  ResourceList requests;
  if (!(gates.Enabled(kGatePodLevelResources) && HasPodLevelResources(pod))) {
    PodRequestOptions options;
    options.pod_level_resources = false;
    options.sidecars = gates.Enabled(kGateSidecarContainers);
    if (pod.overhead.empty()) {
      requests = ComputePodRequests(pod, options);
    } else {
      Pod without_overhead = pod;
      without_overhead.overhead.clear();
      requests = ComputePodRequests(without_overhead, options);
    }
  }
  if (pod.pod_level_requests.has_value()) {
    for (const auto& [name, q] : *pod.pod_level_requests) {
      if (IsSupportedPodLevelResource(name)) {
        requests[name] = q;
      }
    }
  }
  return requests;
}

int64_t InComparisonUnits(std::string_view resource, const Quantity& q) {
  return resource == kResourceCpu ? q.MilliValue() : q.Value();
}

// SmallerRequest: a's memory request below b's, or equal and a's cpu not above b's.
bool SmallerRequest(const Preemptee& a, const Preemptee& b) {
  for (std::string_view resource : {kResourceMemory, kResourceCpu}) {
    const int64_t ra = a.Request(resource);
    const int64_t rb = b.Request(resource);
    if (ra != rb) {
      return ra < rb;
    }
  }
  return true;
}

std::vector<Preemptee> Concat(std::initializer_list<const std::vector<Preemptee>*> lists) {
  std::vector<Preemptee> out;
  for (const auto* list : lists) {
    out.insert(out.end(), list->begin(), list->end());
  }
  return out;
}

Error NoSetOfPods(const AdmissionRequirements& missing) {
  return Error(kErrInternal, "no set of running pods found to reclaim resources: " +
                                 RequirementsToString(missing));
}

// PodsToPreemptByDistance: greedy, one pod per round, the one closest to meeting what is
// left; the chosen pod's slot is refilled with the last pod (the order later ties see).
Result<std::vector<Preemptee>> PodsToPreemptByDistance(std::vector<Preemptee> pods,
                                                       AdmissionRequirements requirements) {
  std::vector<Preemptee> evict;
  while (!requirements.empty()) {
    if (pods.empty()) {
      return NoSetOfPods(requirements);
    }
    // Each requirement adds at most 1, so this is worse than any pod.
    double best_distance = static_cast<double>(requirements.size() + 1);
    size_t best = 0;
    for (size_t i = 0; i < pods.size(); ++i) {
      const double distance = Distance(requirements, pods[i]);
      if (distance < best_distance ||
          (distance == best_distance && SmallerRequest(pods[i], pods[best]))) {
        best_distance = distance;
        best = i;
      }
    }
    requirements = Subtract(requirements, {pods[best]});
    evict.push_back(pods[best]);
    pods[best] = pods.back();
    pods.pop_back();
  }
  return evict;
}

}  // namespace

std::string CriticalReason(const Pod& pod) {
  return CriticalReasonOf(pod.IsStaticPod(), pod.IsMirrorPod(), pod.priority);
}

bool Preemptable(const Pod& preemptor, const PodFacts& preemptee) {
  if (IsCriticalPod(preemptor) && preemptee.CriticalReason().empty()) {
    return true;
  }
  if (preemptor.priority.has_value() && preemptee.priority.has_value()) {
    return *preemptor.priority > *preemptee.priority;
  }
  return false;
}

namespace {

// SpecRequests: what GetResourceRequest counts, for every resource: spec requests without
// overhead, then the overhead of each resource the pod requests at all.
ResourceList SpecRequests(const Pod& pod, const FeatureGates& gates) {
  ResourceList requests = SpecRequestsWithoutOverhead(pod, gates);
  for (auto& [name, total] : requests) {
    if (auto it = pod.overhead.find(name); it != pod.overhead.end() && !total.IsZero()) {
      total.Add(it->second);
    }
  }
  return requests;
}

}  // namespace

int64_t ResourceRequest(const Pod& pod, std::string_view resource, const FeatureGates& gates) {
  if (resource == kResourcePods) {
    return 1;
  }
  const ResourceList requests = SpecRequests(pod, gates);
  auto it = requests.find(std::string(resource));
  return it == requests.end() ? 0 : InComparisonUnits(resource, it->second);
}

Resource EvictionFrees(const Pod& pod, const FeatureGates& gates) {
  return Resource::FromPodRequests(SpecRequests(pod, gates));
}

AdmissionRequirement RequirementFor(const InsufficientResource& insufficient) {
  return {insufficient.resource,
          insufficient.requested - (insufficient.capacity - insufficient.used)};
}

std::string RequirementsToString(const AdmissionRequirements& requirements) {
  std::string s = "[";
  for (const AdmissionRequirement& r : requirements) {
    s += "(res: " + r.resource + ", q: " + std::to_string(r.quantity) + "), ";
  }
  return s + "]";
}

int64_t Preemptee::Request(std::string_view resource) const {
  return resource == kResourcePods ? 1 : pod->EvictionFrees().Get(resource);
}

std::vector<Preemptee> MakePreemptees(const std::vector<PodFactsPtr>& pods) {
  std::vector<Preemptee> out;
  out.reserve(pods.size());
  for (const PodFactsPtr& pod : pods) {
    out.push_back(Preemptee{pod});
  }
  return out;
}

AdmissionRequirements Subtract(const AdmissionRequirements& requirements,
                               const std::vector<Preemptee>& pods) {
  AdmissionRequirements left;
  for (const AdmissionRequirement& r : requirements) {
    int64_t quantity = r.quantity;
    for (const Preemptee& pod : pods) {
      quantity -= pod.Request(r.resource);
      if (quantity <= 0) {
        break;
      }
    }
    if (quantity > 0) {
      left.push_back({r.resource, quantity});
    }
  }
  return left;
}

double Distance(const AdmissionRequirements& requirements, const Preemptee& pod) {
  double distance = 0;
  for (const AdmissionRequirement& r : requirements) {
    const auto remaining = static_cast<double>(r.quantity - pod.Request(r.resource));
    if (remaining > 0) {
      const double fraction = remaining / static_cast<double>(r.quantity);
      distance += fraction * fraction;
    }
  }
  return distance;
}

Result<std::vector<Preemptee>> PodsToPreempt(const Pod& preemptor,
                                             const std::vector<Preemptee>& pods,
                                             const AdmissionRequirements& requirements) {
  std::vector<Preemptee> best_effort, burstable, guaranteed;
  for (const Preemptee& p : pods) {
    if (!Preemptable(preemptor, *p.pod)) {
      continue;
    }
    (p.qos() == QosClass::kBestEffort  ? best_effort
     : p.qos() == QosClass::kBurstable ? burstable
                                       : guaranteed)
        .push_back(p);
  }
  const AdmissionRequirements unmet =
      Subtract(requirements, Concat({&best_effort, &burstable, &guaranteed}));
  if (!unmet.empty()) {
    return NoSetOfPods(unmet);
  }
  // Guaranteed pods only for what no other class can free, then Burstable pods for what
  // BestEffort pods and those Guaranteed picks cannot, then BestEffort pods for the rest.
  NG_ASSIGN_OR_RETURN(auto guaranteed_evict,
                      PodsToPreemptByDistance(
                          guaranteed, Subtract(requirements, Concat({&best_effort, &burstable}))));
  NG_ASSIGN_OR_RETURN(
      auto burstable_evict,
      PodsToPreemptByDistance(burstable,
                              Subtract(requirements, Concat({&best_effort, &guaranteed_evict}))));
  NG_ASSIGN_OR_RETURN(
      auto best_effort_evict,
      PodsToPreemptByDistance(
          best_effort, Subtract(requirements, Concat({&burstable_evict, &guaranteed_evict}))));
  return Concat({&best_effort_evict, &burstable_evict, &guaranteed_evict});
}

}  // namespace nodegate::admit::kubelet
