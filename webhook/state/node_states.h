#pragma once
// NodeStates: what the webhook knows of every node and of the pods bound to it, kept from the
// API server's watch (it is the reflectors' CacheSink), plus the pods allowed but not yet seen
// in the watch ("assumed" pods, as the scheduler keeps them: this replica's own, and the claims
// of the other replicas read from the API server, webhook/claims/).
//
// Compact: a pod is kept as its PodFacts (admit/framework/pod_facts.h), one copy per pod,
// shared by its node's Checker. Each node's kubelet-profile Checker is built when a review
// first needs it and then kept in step with the watch, so a review costs one kubelet
// admission, not a rebuild of the node.
//
// Thread-safe: one mutex orders the watch's updates and the reviews, so two reviews for the
// last free slot (or one host port) are judged one after the other, and the second sees the
// first as assumed.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "admit/api/types.h"
#include "admit/check/checker.h"
#include "kube/reflector/reflector.h"

namespace nodegate::webhook {

using Clock = std::chrono::steady_clock;

// NodeSnapshot: one read of a node and its pods (the fallback before the cache has synced).
struct NodeSnapshot {
  admit::Node node;
  std::vector<admit::PodFactsPtr> pods;
};

struct NodeVerdict {
  bool node_known = false;  // false: the node is not in the cache; `verdict` is empty
  admit::PodVerdict verdict;
  size_t pods_on_node = 0;  // before the candidate
};

// Claim: a pod allowed (by this replica or another) and not yet seen in the watch, until
// `expires`.
struct Claim {
  admit::PodFactsPtr facts;
  Clock::time_point expires;
};

class NodeStates : public kube::CacheSink {
 public:
  // `options`: profile (kubelet) and feature gates; host_os is each node's kubernetes.io/os
  // label. `assume_ttl`: how long an allowed pod counts without being seen in the watch.
  NodeStates(admit::CheckOptions options, Clock::duration assume_ttl,
             std::function<Clock::time_point()> now = Clock::now);

  // kube::CacheSink: the watch of nodes and of the pods bound to a node. A terminal pod, or
  // one not bound, counts as deleted.
  void ReplaceNodes(std::vector<kube::NodeRecord> nodes) override;
  void UpsertNode(kube::NodeRecord node) override;
  void DeleteNode(const std::string& name) override;
  void ReplacePods(std::vector<kube::PodRecord> pods) override;
  void UpsertPod(kube::PodRecord pod) override;
  void DeletePod(const kube::PodRecord& pod) override;
  admit::PodFactsPtr KnownPod(std::string_view uid, std::string_view resource_version) override;

  // JudgeCached: the candidate (spec.nodeName set) against the cached node. With `assume`, an
  // allowed candidate is kept as assumed until the watch shows it or the time limit passes.
  NodeVerdict JudgeCached(const admit::Pod& candidate, bool assume);
  // JudgeSnapshot: the same against a node read just now (plus the pods assumed for it).
  NodeVerdict JudgeSnapshot(const admit::Pod& candidate, NodeSnapshot snapshot, bool assume);
  // Assume: keep an allowed candidate as assumed on its node (after JudgeCached without).
  void Assume(const admit::Pod& candidate);
  // AdoptClaims: the other replicas' claims on a node, kept as assumed pods until they expire
  // or the watch shows them (a claim already known or already watched changes nothing).
  void AdoptClaims(const std::string& node, const std::vector<Claim>& claims);
  // Watched: whether the watch shows a pod of this identity (on any node).
  bool Watched(std::string_view identity);

  size_t AssumedPods();
  size_t Nodes();
  size_t Pods();
  const admit::FeatureGates& gates() const { return options_.gates; }

  // PodIdentity: metadata.uid, or NAMESPACE/NAME for an object without one.
  static std::string PodIdentity(const admit::Pod& pod);

 private:
  struct PodSlot {
    admit::PodFactsPtr facts;
    std::string resource_version;
  };
  struct NodeEntry {
    std::shared_ptr<const admit::Node> node;  // null: pods bound to a node not (yet) listed
    // By identity; the keys view into the facts the slots keep.
    std::unordered_map<std::string_view, PodSlot> pods;
    std::map<std::string, Claim, std::less<>> assumed;  // by identity, allowed, not watched
    std::optional<admit::Checker> checker;              // node + pods + assumed, built on demand
  };

  static std::string_view IdentityOf(const admit::PodFacts& facts);
  admit::CheckOptions OptionsFor(const admit::Node& node) const;
  NodeEntry& Entry(const std::string& node_name);
  void DropEntryIfEmpty(const std::string& node_name);
  void ExpireAssumed(NodeEntry& entry);
  admit::Checker& CheckerFor(NodeEntry& entry);
  void RemovePodLocked(std::string_view identity);
  void UpsertPodLocked(kube::PodRecord pod);
  void AssumeLocked(NodeEntry& entry, admit::PodFactsPtr facts);
  NodeVerdict JudgeLocked(const admit::Pod& candidate, admit::Checker& checker, NodeEntry& entry,
                          bool assume);

  const admit::CheckOptions options_;
  const Clock::duration assume_ttl_;
  const std::function<Clock::time_point()> now_;

  std::mutex mu_;
  // Node-based: references to entries stay valid as it grows.
  std::unordered_map<std::string, NodeEntry> nodes_;
  // Pod identity -> the entry of the node it is bound to (the key views into its facts).
  std::unordered_map<std::string_view, NodeEntry*> pod_node_;
};

}  // namespace nodegate::webhook
