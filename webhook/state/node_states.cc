#include "webhook/state/node_states.h"

#include <set>
#include <utility>

namespace nodegate::webhook {

NodeStates::NodeStates(admit::CheckOptions options, Clock::duration assume_ttl,
                       std::function<Clock::time_point()> now)
    : options_(std::move(options)), assume_ttl_(assume_ttl), now_(std::move(now)) {}

std::string NodeStates::PodIdentity(const admit::Pod& pod) {
  return pod.uid.empty() ? pod.Key() : pod.uid;
}

admit::CheckOptions NodeStates::OptionsFor(const admit::Node& node) const {
  admit::CheckOptions options = options_;
  // The kubelet's own OS is what the node reports; its label says which.
  auto os = node.labels.find(std::string(admit::kLabelOs));
  options.host_os = os != node.labels.end() && !os->second.empty() ? os->second : "linux";
  return options;
}

NodeStates::NodeEntry& NodeStates::Entry(const std::string& node_name) { return nodes_[node_name]; }

void NodeStates::DropEntryIfEmpty(const std::string& node_name) {
  auto it = nodes_.find(node_name);
  if (it != nodes_.end() && !it->second.node && it->second.pods.empty() &&
      it->second.assumed.empty()) {
    nodes_.erase(it);
  }
}

void NodeStates::ReplaceNodes(std::vector<admit::Node> nodes) {
  std::lock_guard lock(mu_);
  std::set<std::string> listed;
  for (admit::Node& node : nodes) {
    listed.insert(node.name);
    NodeEntry& entry = Entry(node.name);
    entry.node = std::move(node);
    entry.checker.reset();
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    NodeEntry& entry = it->second;
    if (listed.count(it->first) == 0) {
      entry.node.reset();
      entry.checker.reset();
    }
    if (!entry.node && entry.pods.empty() && entry.assumed.empty()) {
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
}

void NodeStates::UpsertNode(admit::Node node) {
  std::lock_guard lock(mu_);
  NodeEntry& entry = Entry(node.name);
  entry.node = std::move(node);
  entry.checker.reset();  // allocatable, labels or taints may have changed
}

void NodeStates::DeleteNode(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return;
  }
  it->second.node.reset();
  it->second.checker.reset();
  DropEntryIfEmpty(name);
}

void NodeStates::RemovePodLocked(const std::string& identity) {
  auto bound = pod_node_.find(identity);
  if (bound == pod_node_.end()) {
    return;
  }
  const std::string node_name = bound->second;
  pod_node_.erase(bound);
  NodeEntry& entry = Entry(node_name);
  auto pod = entry.pods.find(identity);
  if (pod != entry.pods.end()) {
    const std::string key = pod->second.Key();
    entry.pods.erase(pod);
    if (entry.checker) {
      entry.checker->RemoveExistingPod(key);
      // A pod assumed under the same NAMESPACE/NAME (deleted and created again) stays.
      for (const auto& [id, assumed] : entry.assumed) {
        if (assumed.pod.Key() == key) {
          entry.checker->AddExistingPods({assumed.pod});
        }
      }
    }
  }
  DropEntryIfEmpty(node_name);
}

void NodeStates::UpsertPod(admit::Pod pod) {
  std::lock_guard lock(mu_);
  const std::string identity = PodIdentity(pod);
  auto bound = pod_node_.find(identity);
  if (pod.node_name.empty() || pod.IsTerminal() ||
      (bound != pod_node_.end() && bound->second != pod.node_name)) {
    RemovePodLocked(identity);
  }
  if (pod.node_name.empty() || pod.IsTerminal()) {
    return;  // holds nothing on any node
  }
  NodeEntry& entry = Entry(pod.node_name);
  entry.assumed.erase(identity);  // seen at last: the watch's copy counts from now on
  auto previous = entry.pods.find(identity);
  if (entry.checker) {
    if (previous != entry.pods.end() && previous->second.Key() != pod.Key()) {
      entry.checker->RemoveExistingPod(previous->second.Key());
    }
    entry.checker->AddExistingPods({pod});  // replaces the pod with the same NAMESPACE/NAME
  }
  pod_node_[identity] = pod.node_name;
  entry.pods[identity] = std::move(pod);
}

void NodeStates::DeletePod(const admit::Pod& pod) {
  std::lock_guard lock(mu_);
  const std::string identity = PodIdentity(pod);
  RemovePodLocked(identity);
  // A pod deleted before the watch showed it (or deleted at once) is no longer assumed.
  if (!pod.node_name.empty()) {
    auto it = nodes_.find(pod.node_name);
    if (it != nodes_.end() && it->second.assumed.erase(identity) > 0) {
      it->second.checker.reset();
      DropEntryIfEmpty(pod.node_name);
    }
  }
}

void NodeStates::ReplacePods(std::vector<admit::Pod> pods) {
  std::lock_guard lock(mu_);
  for (auto& [name, entry] : nodes_) {
    entry.pods.clear();
    entry.checker.reset();
  }
  pod_node_.clear();
  for (admit::Pod& pod : pods) {
    if (pod.node_name.empty() || pod.IsTerminal()) {
      continue;
    }
    const std::string identity = PodIdentity(pod);
    NodeEntry& entry = Entry(pod.node_name);
    entry.assumed.erase(identity);
    pod_node_[identity] = pod.node_name;
    entry.pods[identity] = std::move(pod);
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    const NodeEntry& entry = it->second;
    if (!entry.node && entry.pods.empty() && entry.assumed.empty()) {
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
}

void NodeStates::ExpireAssumed(NodeEntry& entry) {
  const Clock::time_point now = now_();
  for (auto it = entry.assumed.begin(); it != entry.assumed.end();) {
    if (it->second.expires <= now) {
      // Never seen in the watch: the API server did not store it (another webhook denied it,
      // the request failed) or it is gone already. The node is rebuilt without it.
      it = entry.assumed.erase(it);
      entry.checker.reset();
    } else {
      ++it;
    }
  }
}

admit::Checker& NodeStates::CheckerFor(NodeEntry& entry) {
  if (!entry.checker) {
    entry.checker.emplace(*entry.node, OptionsFor(*entry.node));
    std::vector<admit::Pod> pods;
    pods.reserve(entry.pods.size() + entry.assumed.size());
    for (const auto& [id, pod] : entry.pods) {
      pods.push_back(pod);
    }
    for (const auto& [id, assumed] : entry.assumed) {
      pods.push_back(assumed.pod);
    }
    entry.checker->AddExistingPods(std::move(pods));
  }
  return *entry.checker;
}

NodeVerdict NodeStates::JudgeLocked(const admit::Pod& candidate, admit::Checker& checker,
                                    NodeEntry& entry, bool assume) {
  NodeVerdict out;
  out.node_known = true;
  out.pods_on_node = checker.node_info().pods().size();
  out.verdict = checker.Check(candidate);
  if (out.verdict.admitted && assume) {
    // The kubelet's victims stay counted until the watch shows them gone: a later review may
    // be refused where the node would have had room, never allowed where it has none.
    checker.AddExistingPods({candidate});
    entry.assumed[PodIdentity(candidate)] = Assumed{candidate, now_() + assume_ttl_};
    if (!entry.checker || &*entry.checker != &checker) {
      entry.checker.reset();
    }
  }
  return out;
}

NodeVerdict NodeStates::JudgeCached(const admit::Pod& candidate, bool assume) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(candidate.node_name);
  if (it == nodes_.end() || !it->second.node) {
    return NodeVerdict{};
  }
  NodeEntry& entry = it->second;
  ExpireAssumed(entry);
  return JudgeLocked(candidate, CheckerFor(entry), entry, assume);
}

NodeVerdict NodeStates::JudgeSnapshot(const admit::Pod& candidate, NodeSnapshot snapshot,
                                      bool assume) {
  std::lock_guard lock(mu_);
  NodeEntry& entry = Entry(candidate.node_name);
  ExpireAssumed(entry);
  admit::Checker checker(snapshot.node, OptionsFor(snapshot.node));
  // Assumed pods already stored are in the snapshot too, under the same NAMESPACE/NAME: the
  // later copy replaces the earlier, so none counts twice.
  std::vector<admit::Pod> pods = std::move(snapshot.pods);
  for (const auto& [id, assumed] : entry.assumed) {
    pods.push_back(assumed.pod);
  }
  checker.AddExistingPods(std::move(pods));
  NodeVerdict out = JudgeLocked(candidate, checker, entry, assume);
  DropEntryIfEmpty(candidate.node_name);
  return out;
}

size_t NodeStates::AssumedPods() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [name, entry] : nodes_) {
    n += entry.assumed.size();
  }
  return n;
}

size_t NodeStates::Nodes() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [name, entry] : nodes_) {
    n += entry.node ? 1 : 0;
  }
  return n;
}

size_t NodeStates::Pods() {
  std::lock_guard lock(mu_);
  return pod_node_.size();
}

}  // namespace nodegate::webhook
