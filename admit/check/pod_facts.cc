#include "admit/check/pod_facts.h"

#include "admit/kubelet/preemption.h"
#include "admit/kubelet/qos.h"

namespace nodegate::admit {

PodFactsPtr MakePodFacts(const Pod& pod, const FeatureGates& gates, bool already_on_node) {
  auto facts = std::make_shared<PodFacts>();
  facts->key = pod.Key();
  facts->uid = pod.uid;
  facts->source = pod.source;
  facts->owner = InternText(OwnerName(pod));
  facts->priority = pod.priority;
  facts->static_pod = pod.IsStaticPod();
  facts->mirror_pod = pod.IsMirrorPod();
  facts->qos = kubelet::GetPodQos(pod, gates.Enabled(kGatePodLevelResources));
  facts->requests = Resource::FromPodRequests(
      ComputePodRequests(pod, PodRequestOptions::FromGates(gates, already_on_node)));
  Resource frees = kubelet::EvictionFrees(pod, gates);
  if (!SameAmounts(frees, facts->requests)) {
    facts->distinct_eviction_frees = std::make_shared<const Resource>(std::move(frees));
  }
  facts->ports = GetHostPorts(pod, gates.Enabled(kGateSidecarContainers));
  return facts;
}

}  // namespace nodegate::admit
