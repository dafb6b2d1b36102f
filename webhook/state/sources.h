#pragma once
// Where the webhook's cache comes from: the two watched collections (every node; every pod
// bound to a node and not finished) and, until they have been listed, a direct read of the
// one node a review needs.

#include <optional>
#include <string>

#include "admit/framework/feature_gates.h"
#include "kube/client/client.h"
#include "kube/reflector/reflector.h"
#include "webhook/state/node_states.h"

namespace nodegate::webhook {

// NodeWatch, PodWatch: the reflectors' options (kube/reflector/reflector.h) for the two.
kube::ReflectorOptions NodeWatch(const admit::FeatureGates& gates);
kube::ReflectorOptions PodWatch(const admit::FeatureGates& gates);

// ReadNode: the node and the pods bound to it, read now (the pods from the API server's
// watch cache, indexed by spec.nodeName); nullopt when there is no such node.
Result<std::optional<NodeSnapshot>> ReadNode(kube::ApiClient& client,
                                             const admit::FeatureGates& gates,
                                             const std::string& node, Clock::time_point deadline);

}  // namespace nodegate::webhook
