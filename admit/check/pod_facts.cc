#include "admit/check/pod_facts.h"

#include <cstdio>
#include <ctime>

#include "admit/kubelet/preemption.h"
#include "admit/kubelet/qos.h"

namespace nodegate::admit {

// Fractions of seconds and offsets are tolerated ("2026-12-06T05:36:02.5+01:00").
int64_t StartTimeSeconds(const std::string& text) {
  std::tm tm{};
  int offset_hours = 0;
  int offset_minutes = 0;
  char sign = 'Z';
  const int n = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
  if (n != 6) {
    return 0;
  }
  const size_t zone = text.find_first_of("Z+-", 19);
  if (zone != std::string::npos && text[zone] != 'Z' &&
      std::sscanf(text.c_str() + zone, "%c%2d:%2d", &sign, &offset_hours, &offset_minutes) != 3) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t seconds = static_cast<int64_t>(timegm(&tm));
  const int64_t offset = (offset_hours * 60 + offset_minutes) * 60;
  seconds += sign == '+' ? -offset : sign == '-' ? offset : 0;
  return seconds;
}

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
  facts->start_time = StartTimeSeconds(pod.start_time);
  return facts;
}

}  // namespace nodegate::admit
