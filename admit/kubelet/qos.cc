#include "admit/kubelet/qos.h"

#include <array>

namespace nodegate::admit::kubelet {
namespace {

constexpr std::array<std::string_view, 2> kQosResources = {kResourceCpu, kResourceMemory};

Quantity AmountOf(const ResourceList& list, std::string_view name) {
  auto it = list.find(std::string(name));
  return it == list.end() ? Quantity() : it->second;
}

// ResourcesQos: the class of one requests/limits pair (a container's or the pod-level one).
// An absent entry counts as zero, so "request 0, no limit" is best effort for that resource.
QosClass ResourcesQos(const ResourceList& requests, const ResourceList& limits) {
  if (requests.empty() && limits.empty()) {
    return QosClass::kBestEffort;
  }
  bool seen = false;
  bool best_effort = false;
  for (std::string_view name : kQosResources) {
    const Quantity request = AmountOf(requests, name);
    const Quantity limit = AmountOf(limits, name);
    if (!(request == limit)) {
      return QosClass::kBurstable;  // at least one of them is set and they differ
    }
    const bool zero = request.IsZero();
    if (seen && zero != best_effort) {
      return QosClass::kBurstable;  // cpu pinned and memory open, or the other way round
    }
    seen = true;
    best_effort = zero;
  }
  return best_effort ? QosClass::kBestEffort : QosClass::kGuaranteed;
}

}  // namespace

std::string_view QosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kBestEffort:
      return "BestEffort";
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kGuaranteed:
      return "Guaranteed";
  }
  return "BestEffort";
}

QosClass ComputePodQos(const Pod& pod, bool pod_level_resources) {
  if (pod_level_resources && pod.pod_level_requests.has_value()) {
    return ResourcesQos(*pod.pod_level_requests, pod.pod_level_limits);
  }
  // Every container must agree: one Burstable container, or a mix, makes the pod Burstable.
  std::optional<QosClass> pod_qos;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& c : *list) {
      const QosClass qos = ResourcesQos(c.requests, c.limits);
      if (qos == QosClass::kBurstable || (pod_qos.has_value() && *pod_qos != qos)) {
        return QosClass::kBurstable;
      }
      pod_qos = qos;
    }
  }
  return pod_qos.value_or(QosClass::kBestEffort);
}

QosClass GetPodQos(const Pod& pod, bool pod_level_resources) {
  if (pod.qos_class == "Guaranteed") {
    return QosClass::kGuaranteed;
  }
  if (pod.qos_class == "Burstable") {
    return QosClass::kBurstable;
  }
  if (pod.qos_class == "BestEffort") {
    return QosClass::kBestEffort;
  }
  return ComputePodQos(pod, pod_level_resources);
}

}  // namespace nodegate::admit::kubelet
