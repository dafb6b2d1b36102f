#pragma once
// PodInfo and NodeInfo: the node as the predicates see it (pkg/scheduler/framework/types.go):
// the Node object, its allocatable, the pods on it (their PodFacts: effective requests, host
// ports, what the kubelet's preemption reads), the sum of those requests, and the host ports
// they hold (with holders, for explanations). A candidate is a PodInfo: the whole pod, whose
// every field a predicate may read.
//
//   NodeInfo info(node);
//   info.AddPod(MakePodFacts(existing, gates, /*already_on_node=*/true));  // check/pod_facts.h
//   PodInfo candidate = MakePodInfo(pod, gates, false);

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/host_port_set.h"
#include "admit/framework/pod_facts.h"
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
  const std::vector<PodFactsPtr>& pods() const { return pods_; }
  const HostPortSet& used_ports() const { return used_ports_; }

  // AddPod: account the pod's requests and host ports (it replaces a pod of the same key).
  void AddPod(PodFactsPtr pod);
  // RemovePod: drop the pod with that NAMESPACE/NAME; false when absent.
  bool RemovePod(std::string_view key);
  const PodFacts* FindPod(std::string_view key) const;
  PodFactsPtr FindPodPtr(std::string_view key) const;

 private:
  Node node_;
  Resource allocatable_;
  Resource requested_;
  std::vector<PodFactsPtr> pods_;
  // key -> position in pods_; the views point into the PodFacts that pods_ keeps alive.
  std::unordered_map<std::string_view, size_t> index_;
  HostPortSet used_ports_;
};

}  // namespace nodegate::admit
