#include "admit/framework/node_info.h"

#include <utility>

namespace nodegate::admit {

PodInfo MakePodInfo(Pod pod, const FeatureGates& gates, bool already_on_node) {
  ResourceList requests =
      ComputePodRequests(pod, PodRequestOptions::FromGates(gates, already_on_node));
  return MakePodInfoWithRequests(std::move(pod), requests, gates);
}

PodInfo MakePodInfoWithRequests(Pod pod, const ResourceList& requests, const FeatureGates& gates) {
  PodInfo info;
  info.requests = Resource::FromPodRequests(requests);
  info.ports = GetHostPorts(pod, gates.Enabled(kGateSidecarContainers));
  info.pod = std::move(pod);
  return info;
}

NodeInfo::NodeInfo(Node node)
    : node_(std::move(node)), allocatable_(Resource::FromResourceList(node_.allocatable)) {}

void NodeInfo::AddPod(PodFactsPtr pod) {
  // A pod is on a node once: a pod of the same key leaves first. One lookup for the common
  // case, a new pod (a cluster-wide list adds every pod once). The key's view points into the
  // facts, which pods_ keeps alive.
  const std::string_view key = pod->key;
  if (!index_.try_emplace(key, pods_.size()).second) {
    RemovePod(key);
    index_.emplace(key, pods_.size());
  }
  requested_.Add(pod->requests);
  for (const WantedPort& p : pod->ports) {
    used_ports_.Add(p.port, PortHolder{pod->key, p.container, pod->source});
  }
  pods_.push_back(std::move(pod));
}

bool NodeInfo::RemovePod(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    return false;
  }
  const size_t pos = it->second;
  index_.erase(it);
  requested_.Subtract(pods_[pos]->requests);
  if (!pods_[pos]->ports.empty()) {
    used_ports_.RemovePod(key);
  }
  // Order kept: the kubelet's preemption breaks ties by position (the later pod wins).
  pods_.erase(pods_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (auto& [k, p] : index_) {
    if (p > pos) {
      --p;
    }
  }
  return true;
}

const PodFacts* NodeInfo::FindPod(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : pods_[it->second].get();
}

PodFactsPtr NodeInfo::FindPodPtr(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : pods_[it->second];
}

}  // namespace nodegate::admit
