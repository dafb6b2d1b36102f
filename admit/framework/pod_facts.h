#pragma once
// PodFacts: what a pod already on a node contributes to admitting another pod there: its
// effective requests, the host ports it holds, and what the kubelet's critical-pod preemption
// reads of it (priority, QoS class, what evicting it frees). Computed once from the pod
// (check/pod_facts.h MakePodFacts), immutable, and shared: a cluster-wide cache keeps one copy
// per pod, and every NodeInfo that holds the pod points at it instead of copying the pod.
//
//   PodFactsPtr facts = MakePodFacts(pod, gates, /*already_on_node=*/true);
//   node_info.AddPod(facts);

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/host_port_set.h"
#include "admit/framework/resource.h"

namespace nodegate::admit {

// SharedText: a text that many pods carry alike (their controller's name), kept once.
using SharedText = std::shared_ptr<const std::string>;

// InternText: the one copy of `text` that every caller asking for it shares (nullptr for "").
// Thread-safe; copies nobody holds any longer are forgotten.
SharedText InternText(std::string_view text);

struct PodFacts {
  std::string key;     // NAMESPACE/NAME
  std::string uid;     // metadata.uid, "" for a pod read from a file
  std::string source;  // the file it came from, for reports; "" for pods read from the API
  SharedText owner;    // its controller as people name it ("DaemonSet ns/name"), or null
  std::optional<int32_t> priority;
  bool static_pod = false;  // kubernetes.io/config.source other than "api"
  bool mirror_pod = false;  // kubernetes.io/config.mirror
  QosClass qos = QosClass::kBestEffort;
  Resource requests;  // effective requests (the scheduler's), in comparison units
  std::vector<WantedPort> ports;
  // status.startTime in seconds since the epoch, 0 when not started (the scheduler's
  // preemption prefers, among equal priorities, to keep the pod that started first).
  int64_t start_time = 0;
  // What evicting it frees (the kubelet's GetResourceRequest) when that is not `requests`
  // (overhead, pod-level resources, a resize in progress); null for most pods.
  std::shared_ptr<const Resource> distinct_eviction_frees;

  const std::string& Owner() const;
  const Resource& EvictionFrees() const {
    return distinct_eviction_frees ? *distinct_eviction_frees : requests;
  }
  // CriticalReason: why the kubelet treats it as critical ("static pod", "mirror pod",
  // "priority 2000001000"), or "" (pkg/kubelet/types IsCriticalPod).
  std::string CriticalReason() const;
};

// SameAmounts: the two hold the same amount of every resource.
bool SameAmounts(const Resource& a, const Resource& b);

using PodFactsPtr = std::shared_ptr<const PodFacts>;

// CriticalReasonOf: the rule behind PodFacts::CriticalReason, for a Pod too.
std::string CriticalReasonOf(bool static_pod, bool mirror_pod, std::optional<int32_t> priority);

// OwnerName: "Kind NAMESPACE/NAME" of a namespaced pod's controller, or "".
std::string OwnerName(const Pod& pod);

}  // namespace nodegate::admit
