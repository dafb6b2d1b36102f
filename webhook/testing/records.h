#pragma once
// Records from admit's test builders, for the webhook's table tests: what the reflectors would
// hand NodeStates for these pods and nodes.

#include <memory>
#include <vector>

#include "admit/api/types.h"
#include "admit/check/pod_facts.h"
#include "kube/decode/objects.h"

namespace nodegate::webhook::testing {

inline kube::PodRecord Rec(const admit::Pod& pod) {
  return kube::PodRecordOf(pod, admit::FeatureGates());
}

inline std::vector<kube::PodRecord> Recs(const std::vector<admit::Pod>& pods) {
  std::vector<kube::PodRecord> out;
  for (const admit::Pod& pod : pods) {
    out.push_back(Rec(pod));
  }
  return out;
}

inline kube::NodeRecord NodeRec(const admit::Node& node) {
  return kube::NodeRecord{std::make_shared<const admit::Node>(node), "1"};
}

inline std::vector<kube::NodeRecord> Nodes(const std::vector<admit::Node>& nodes) {
  std::vector<kube::NodeRecord> out;
  for (const admit::Node& node : nodes) {
    out.push_back(NodeRec(node));
  }
  return out;
}

inline admit::PodFactsPtr Facts(const admit::Pod& pod) {
  return admit::MakePodFacts(pod, admit::FeatureGates(), /*already_on_node=*/true);
}

}  // namespace nodegate::webhook::testing
