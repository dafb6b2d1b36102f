#pragma once
// MakePodFacts: a pod's PodFacts (framework/pod_facts.h), computed as the scheduler and the
// kubelet compute each part: effective requests (status resources for a pod already on a node
// under InPlacePodVerticalScaling), host ports, QoS class, what evicting it frees.

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/pod_facts.h"

namespace nodegate::admit {

PodFactsPtr MakePodFacts(const Pod& pod, const FeatureGates& gates, bool already_on_node);

// StartTimeSeconds: status.startTime (RFC 3339, as the API server writes it) in seconds since
// the epoch, as PodFacts::start_time keeps it; 0 for "" or anything else.
int64_t StartTimeSeconds(const std::string& rfc3339);

}  // namespace nodegate::admit
