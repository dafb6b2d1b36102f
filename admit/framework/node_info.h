#pragma once
// PodInfo and NodeInfo: the node as the predicates see it (pkg/scheduler/framework/types.go):
// the Node object, its allocatable, the pods on it with their effective requests, the sum of
// those requests, and the host ports they hold (with holders, for explanations).
//
//   NodeInfo info(node);
//   info.AddPod(MakePodInfo(existing, gates, /*already_on_node=*/true));
//   PodInfo candidate = MakePodInfo(pod, gates, false);

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/host_port_set.h"
#include "admit/framework/resource.h"

namespace nodegate::admit {

struct PodInfo {
  Pod pod;
  Resource requests;              // effective requests in comparison units
  std::vector<WantedPort> ports;  // host ports (GetHostPorts)
};

// MakePodInfo: requests and host ports computed once. Pods `already_on_node` count their status
// resources when InPlacePodVerticalScaling is on.
PodInfo MakePodInfo(Pod pod, const FeatureGates& gates, bool already_on_node);

// MakePodInfoWithRequests: as MakePodInfo but with requests computed from an explicit list
// (the kubelet drops unknown extended resources first).
PodInfo MakePodInfoWithRequests(Pod pod, const ResourceList& requests, const FeatureGates& gates);

class NodeInfo {
 public:
  explicit NodeInfo(Node node);

  const Node& node() const { return node_; }
  const Resource& allocatable() const { return allocatable_; }
  const Resource& requested() const { return requested_; }
  const std::vector<PodInfo>& pods() const { return pods_; }
  const HostPortSet& used_ports() const { return used_ports_; }

  // AddPod: account the pod's requests and host ports.
  void AddPod(PodInfo pod);
  // RemovePod: drop the pod with that NAMESPACE/NAME; false when absent.
  bool RemovePod(std::string_view key);
  const PodInfo* FindPod(std::string_view key) const;

 private:
  Node node_;
  Resource allocatable_;
  Resource requested_;
  std::vector<PodInfo> pods_;
  std::unordered_map<std::string, size_t> index_;  // key -> position in pods_
  HostPortSet used_ports_;
};

}  // namespace nodegate::admit
