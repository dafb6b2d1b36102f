#include "explain/cluster/cluster.h"

namespace nodegate::explain {

void Cluster::AddNode(std::shared_ptr<const admit::Node> node) {
  const std::string name = node->name;
  if (auto it = index_.find(name); it != index_.end()) {
    nodes_[it->second] = NodeEntry{node, admit::NodeInfo(*node), {}};
    return;
  }
  index_.emplace(name, nodes_.size());
  admit::NodeInfo info(*node);
  nodes_.push_back(NodeEntry{std::move(node), std::move(info), {}});
}

void Cluster::AddPod(kube::PodRecord record) {
  ++counts_.pods;
  if (!tracked_owner_.empty() && record.facts->Owner() == tracked_owner_) {
    owned_.push_back(PodRef{record.facts->key, record.node_name, record.phase});
  }
  if (record.Terminal()) {
    ++counts_.terminal;
    return;
  }
  if (record.node_name.empty()) {
    ++counts_.unbound;
    return;
  }
  auto it = index_.find(record.node_name);
  if (it == index_.end()) {
    ++counts_.on_unknown_nodes;
    return;
  }
  NodeEntry& entry = nodes_[it->second];
  if (!record.required_anti_affinity.empty()) {
    entry.anti_affinity.push_back(
        AntiAffinityHolder{record.facts->key, std::move(record.required_anti_affinity)});
  }
  entry.info.AddPod(std::move(record.facts));
  ++counts_.bound;
}

void Cluster::AddUnbound(nlohmann::json object) { unbound_.push_back(std::move(object)); }

void Cluster::CountUnreadable(const std::string& why) {
  ++counts_.pods;
  if (counts_.unreadable++ == 0) {
    counts_.first_unreadable = why;
  }
}

const NodeEntry* Cluster::FindNode(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

}  // namespace nodegate::explain
