#pragma once
// The QoS class of a pod (pkg/apis/core/v1/helper/qos), which orders the kubelet's choice of
// pods to evict for a critical pod: BestEffort first, then Burstable, then Guaranteed.
// Only cpu and memory decide it:
//   - BestEffort: no container (init containers included) sets a cpu or memory request or limit;
//   - Guaranteed: every container sets cpu and memory limits equal to its requests;
//   - Burstable: anything else.
// With PodLevelResources and a pod-level `resources` block, that block alone decides.
// `status.qosClass`, when the pod has one, is taken as it is (GetPodQOS).

#include <string_view>

#include "admit/api/types.h"

namespace nodegate::admit::kubelet {

// The class itself is an API value (admit/api/types.h); this namespace names it too.
using QosClass = admit::QosClass;

// QosClassName: "BestEffort", "Burstable" or "Guaranteed".
std::string_view QosClassName(QosClass qos);

// ComputePodQos: the class from the pod's spec (requests already defaulted from limits).
QosClass ComputePodQos(const Pod& pod, bool pod_level_resources);

// GetPodQos: status.qosClass when set, else ComputePodQos.
QosClass GetPodQos(const Pod& pod, bool pod_level_resources);

}  // namespace nodegate::admit::kubelet
