#include "admit/check/pod_facts.h"

#include "admit/kubelet/preemption.h"
#include "admit/kubelet/qos.h"

namespace nodegate::admit {

PodFactsPtr MakePodFacts(const Pod& pod, const FeatureGates& gates, bool already_on_node) {
  auto facts = std::make_shared<PodFacts>();
  facts->key = pod.Key();
  facts->uid = pod.uid;
  facts->source = pod.source;
  facts->owner = OwnerName(pod);
  facts->priority = pod.priority;
  facts->static_pod = pod.IsStaticPod();
  facts->mirror_pod = pod.IsMirrorPod();
  facts->qos = kubelet::GetPodQos(pod, gates.Enabled(kGatePodLevelResources));
  facts->requests = Resource::FromPodRequests(
      ComputePodRequests(pod, PodRequestOptions::FromGates(gates, already_on_node)));
  facts->eviction_frees = kubelet::EvictionFrees(pod, gates);
  facts->ports = GetHostPorts(pod, gates.Enabled(kGateSidecarContainers));
  return facts;
}

}  // namespace nodegate::admit
