#pragma once
// Cluster: the nodes and what is bound to them, as the scheduler's cache holds them: one
// admit::NodeInfo per node with the compact PodFacts of its pods (kube/decode/objects.h), and
// the full objects of the pods that are not bound (Pending pods: few, and what `explain`
// places). Terminal pods (Succeeded, Failed) hold nothing and are only counted.
//
//   Cluster cluster;
//   cluster.AddNode(node);                 // every node first
//   cluster.AddPod(std::move(record));     // then the pods, as the list streams in
//   cluster.AddUnbound(pod_json);          // a pod without spec.nodeName, whole

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "admit/framework/node_info.h"
#include "kube/decode/objects.h"

namespace nodegate::explain {

// AntiAffinityHolder: a pod on a node with required pod anti-affinity (its terms, JSON text):
// the scheduler's InterPodAffinity Filter keeps matching pods out of its topology domain.
struct AntiAffinityHolder {
  std::string pod;  // NAMESPACE/NAME
  std::string terms;
};

struct NodeEntry {
  std::shared_ptr<const admit::Node> node;
  admit::NodeInfo info;
  std::vector<AntiAffinityHolder> anti_affinity;
};

// PodRef: where a pod of a tracked controller is.
struct PodRef {
  std::string key;  // NAMESPACE/NAME
  std::string node;
  std::string phase;
};

struct ClusterCounts {
  size_t pods = 0;              // every pod listed
  size_t bound = 0;             // on a known node, holding something
  size_t terminal = 0;          // Succeeded or Failed
  size_t unbound = 0;           // not bound, not terminal
  size_t on_unknown_nodes = 0;  // bound to a node the node list does not have
  size_t unreadable = 0;        // objects admit's decoder refused (left out)
  std::string first_unreadable;
};

class Cluster {
 public:
  void AddNode(std::shared_ptr<const admit::Node> node);
  // AddPod: a pod as the list decoder reduced it; bound pods join their node.
  void AddPod(kube::PodRecord record);
  // AddUnbound: the whole object of a pod that is neither bound nor terminal.
  void AddUnbound(nlohmann::json object);
  void CountUnreadable(const std::string& why);
  // TrackOwner: keep where every pod of this controller ("DaemonSet ns/name") is; call before
  // the pods are added.
  void TrackOwner(std::string owner) { tracked_owner_ = std::move(owner); }

  const std::vector<NodeEntry>& nodes() const { return nodes_; }
  const NodeEntry* FindNode(std::string_view name) const;
  const std::vector<nlohmann::json>& unbound() const { return unbound_; }
  const std::vector<PodRef>& owned() const { return owned_; }
  const ClusterCounts& counts() const { return counts_; }

 private:
  std::vector<NodeEntry> nodes_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<nlohmann::json> unbound_;
  std::string tracked_owner_;
  std::vector<PodRef> owned_;
  ClusterCounts counts_;
};

}  // namespace nodegate::explain
