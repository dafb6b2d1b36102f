#pragma once
// MakePodFacts: a pod's PodFacts (framework/pod_facts.h), computed as the scheduler and the
// kubelet compute each part: effective requests (status resources for a pod already on a node
// under InPlacePodVerticalScaling), host ports, QoS class, what evicting it frees.

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/pod_facts.h"

namespace nodegate::admit {

PodFactsPtr MakePodFacts(const Pod& pod, const FeatureGates& gates, bool already_on_node);

}  // namespace nodegate::admit
