#include "webhook/state/node_states.h"

#include <algorithm>
#include <set>
#include <utility>

#include "admit/check/pod_facts.h"

namespace nodegate::webhook {

NodeStates::NodeStates(admit::CheckOptions options, Clock::duration assume_ttl,
                       std::function<Clock::time_point()> now)
    : options_(std::move(options)), assume_ttl_(assume_ttl), now_(std::move(now)) {}

std::string NodeStates::PodIdentity(const admit::Pod& pod) {
  return pod.uid.empty() ? pod.Key() : pod.uid;
}

std::string_view NodeStates::IdentityOf(const admit::PodFacts& facts) {
  return facts.uid.empty() ? std::string_view(facts.key) : std::string_view(facts.uid);
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

void NodeStates::ReplaceNodes(std::vector<kube::NodeRecord> nodes) {
  std::lock_guard lock(mu_);
  std::set<std::string, std::less<>> listed;
  for (kube::NodeRecord& record : nodes) {
    listed.insert(record.node->name);
    NodeEntry& entry = Entry(record.node->name);
    entry.node = std::move(record.node);
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

void NodeStates::UpsertNode(kube::NodeRecord record) {
  std::lock_guard lock(mu_);
  NodeEntry& entry = Entry(record.node->name);
  entry.node = std::move(record.node);
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

void NodeStates::RemovePodLocked(std::string_view identity) {
  auto bound = pod_node_.find(identity);
  if (bound == pod_node_.end()) {
    return;
  }
  NodeEntry& entry = *bound->second;
  pod_node_.erase(bound);
  auto slot = entry.pods.find(identity);
  if (slot == entry.pods.end()) {
    return;
  }
  const admit::PodFactsPtr gone = std::move(slot->second.facts);  // alive until we are done
  entry.pods.erase(slot);
  if (entry.checker) {
    entry.checker->RemoveExistingPod(gone->key);
    // A pod assumed under the same NAMESPACE/NAME (deleted and created again) stays.
    for (const auto& [id, assumed] : entry.assumed) {
      if (assumed.facts->key == gone->key) {
        entry.checker->AddExistingPod(assumed.facts);
      }
    }
  }
  if (!entry.node && entry.pods.empty() && entry.assumed.empty()) {
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      if (&it->second == &entry) {
        nodes_.erase(it);
        break;
      }
    }
  }
}

void NodeStates::UpsertPodLocked(kube::PodRecord pod) {
  const std::string identity(pod.Identity());
  const bool holds = !pod.node_name.empty() && !pod.Terminal();
  if (!holds) {
    RemovePodLocked(identity);
  } else if (auto bound = pod_node_.find(identity);
             bound != pod_node_.end() && bound->second != &Entry(pod.node_name)) {
    RemovePodLocked(identity);  // moved to another node (a new binding after a delete)
  }
  if (!pod.node_name.empty()) {
    // Seen at last (or finished): the watch's copy counts from now on, not the assumed one.
    NodeEntry& entry = Entry(pod.node_name);
    if (auto a = entry.assumed.find(identity); a != entry.assumed.end()) {
      const std::string key = a->second.facts->key;
      entry.assumed.erase(a);
      if (entry.checker) {
        entry.checker->RemoveExistingPod(key);
      }
    }
  }
  if (!holds) {
    if (!pod.node_name.empty()) {
      DropEntryIfEmpty(pod.node_name);
    }
    return;  // holds nothing on any node
  }
  NodeEntry& entry = Entry(pod.node_name);
  auto previous = entry.pods.find(identity);
  if (previous != entry.pods.end()) {
    if (entry.checker && previous->second.facts->key != pod.facts->key) {
      entry.checker->RemoveExistingPod(previous->second.facts->key);
    }
    // The keys view into the facts being replaced: unlink them first.
    pod_node_.erase(identity);
    const admit::PodFactsPtr old = std::move(previous->second.facts);
    entry.pods.erase(previous);
  }
  if (entry.checker) {
    entry.checker->AddExistingPod(pod.facts);  // replaces the pod with the same NAMESPACE/NAME
  }
  const std::string_view key = IdentityOf(*pod.facts);
  entry.pods.emplace(key, PodSlot{std::move(pod.facts), std::move(pod.resource_version)});
  pod_node_[key] = &entry;
}

void NodeStates::UpsertPod(kube::PodRecord pod) {
  std::lock_guard lock(mu_);
  UpsertPodLocked(std::move(pod));
}

void NodeStates::DeletePod(const kube::PodRecord& pod) {
  std::lock_guard lock(mu_);
  const std::string identity(pod.Identity());
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

void NodeStates::ReplacePods(std::vector<kube::PodRecord> pods) {
  // Outside the lock: what holds nothing goes, the rest is ordered by node, so each node's
  // entry is looked up once; and the old maps are taken out whole and freed after the lock.
  std::erase_if(pods, [](const kube::PodRecord& p) { return p.node_name.empty() || p.Terminal(); });
  std::sort(pods.begin(), pods.end(), [](const kube::PodRecord& a, const kube::PodRecord& b) {
    return a.node_name < b.node_name;
  });
  std::unordered_map<std::string_view, NodeEntry*> old_index;
  std::vector<std::unordered_map<std::string_view, PodSlot>> old_pods;
  {
    std::lock_guard lock(mu_);
    old_index.swap(pod_node_);  // first: its keys view into the facts the entries drop below
    old_pods.reserve(nodes_.size());
    for (auto& [name, entry] : nodes_) {
      old_pods.push_back(std::move(entry.pods));
      entry.pods.clear();
      entry.checker.reset();
    }
    pod_node_.reserve(pods.size());
    NodeEntry* entry = nullptr;
    const std::string* entry_name = nullptr;
    for (kube::PodRecord& pod : pods) {
      if (entry_name == nullptr || *entry_name != pod.node_name) {
        auto it = nodes_.try_emplace(pod.node_name).first;
        entry = &it->second;
        entry_name = &it->first;
      }
      entry->assumed.erase(pod.Identity());
      const std::string_view key = IdentityOf(*pod.facts);
      auto [slot, added] =
          entry->pods.emplace(key, PodSlot{std::move(pod.facts), std::move(pod.resource_version)});
      if (added) {
        pod_node_[key] = entry;
      }
    }
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      const NodeEntry& e = it->second;
      if (!e.node && e.pods.empty() && e.assumed.empty()) {
        it = nodes_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // old_index is cleared before old_pods, whose facts its keys view into.
  old_index.clear();
}

admit::PodFactsPtr NodeStates::KnownPod(std::string_view uid, std::string_view resource_version) {
  std::lock_guard lock(mu_);
  auto bound = pod_node_.find(uid);
  if (bound == pod_node_.end()) {
    return nullptr;
  }
  auto slot = bound->second->pods.find(uid);
  if (slot == bound->second->pods.end() || slot->second.resource_version != resource_version) {
    return nullptr;
  }
  return slot->second.facts;
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
    for (const auto& [id, slot] : entry.pods) {
      entry.checker->AddExistingPod(slot.facts);
    }
    for (const auto& [id, assumed] : entry.assumed) {
      entry.checker->AddExistingPod(assumed.facts);
    }
  }
  return *entry.checker;
}

void NodeStates::AssumeLocked(NodeEntry& entry, admit::PodFactsPtr facts) {
  if (entry.checker) {
    entry.checker->AddExistingPod(facts);
  }
  const std::string identity(IdentityOf(*facts));
  entry.assumed[identity] = Claim{std::move(facts), now_() + assume_ttl_};
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
    auto facts = admit::MakePodFacts(candidate, options_.gates, /*already_on_node=*/false);
    if (!entry.checker || &*entry.checker != &checker) {
      checker.AddExistingPod(facts);  // a snapshot's checker, for what follows in this call
    }
    AssumeLocked(entry, std::move(facts));
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
  for (admit::PodFactsPtr& pod : snapshot.pods) {
    checker.AddExistingPod(std::move(pod));
  }
  // Assumed pods already stored are in the snapshot too, under the same NAMESPACE/NAME: the
  // later copy replaces the earlier, so none counts twice.
  for (const auto& [id, assumed] : entry.assumed) {
    checker.AddExistingPod(assumed.facts);
  }
  NodeVerdict out = JudgeLocked(candidate, checker, entry, assume);
  DropEntryIfEmpty(candidate.node_name);
  return out;
}

void NodeStates::Assume(const admit::Pod& candidate) {
  std::lock_guard lock(mu_);
  AssumeLocked(Entry(candidate.node_name),
               admit::MakePodFacts(candidate, options_.gates, /*already_on_node=*/false));
}

void NodeStates::AdoptClaims(const std::string& node, const std::vector<Claim>& claims) {
  std::lock_guard lock(mu_);
  NodeEntry& entry = Entry(node);
  ExpireAssumed(entry);
  const Clock::time_point now = now_();
  for (const Claim& claim : claims) {
    const std::string_view identity = IdentityOf(*claim.facts);
    if (claim.expires <= now || pod_node_.count(identity) > 0) {
      continue;  // over, or the watch shows the pod itself
    }
    auto [it, added] = entry.assumed.try_emplace(std::string(identity), claim);
    if (added && entry.checker) {
      entry.checker->AddExistingPod(claim.facts);
    }
  }
  DropEntryIfEmpty(node);
}

bool NodeStates::Watched(std::string_view identity) {
  std::lock_guard lock(mu_);
  return pod_node_.count(identity) > 0;
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
