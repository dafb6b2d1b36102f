#pragma once
// NodeStates: what the webhook knows of every node and of the pods bound to it, kept from the
// API server's watch, plus the pods it has allowed but not yet seen in the watch ("assumed"
// pods, as the scheduler keeps them). Each node has one admit::Checker with the kubelet
// profile, built when a review first needs it and then kept in step with the watch, so a
// review costs one kubelet admission, not a rebuild of the node.
//
// Thread-safe: one mutex orders the watch's updates and the reviews, so two reviews for the
// last free slot (or one host port) are judged one after the other, and the second sees the
// first as assumed.
//
//   NodeStates states(options, std::chrono::seconds(30));
//   states.ReplaceNodes(list);  states.UpsertPod(pod);  ...
//   NodeVerdict v = states.JudgeCached(candidate, /*assume=*/true);

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "admit/api/types.h"
#include "admit/check/checker.h"

namespace nodegate::webhook {

using Clock = std::chrono::steady_clock;

// NodeSnapshot: one read of a node and its pods (the fallback before the cache has synced).
struct NodeSnapshot {
  admit::Node node;
  std::vector<admit::Pod> pods;
};

struct NodeVerdict {
  bool node_known = false;  // false: the node is not in the cache; `verdict` is empty
  admit::PodVerdict verdict;
  size_t pods_on_node = 0;  // before the candidate
};

class NodeStates {
 public:
  // `options`: profile (kubelet) and feature gates; host_os is each node's kubernetes.io/os
  // label. `assume_ttl`: how long an allowed pod counts without being seen in the watch.
  NodeStates(admit::CheckOptions options, Clock::duration assume_ttl,
             std::function<Clock::time_point()> now = Clock::now);

  // The node watch.
  void ReplaceNodes(std::vector<admit::Node> nodes);  // a (re)list: exactly these nodes
  void UpsertNode(admit::Node node);
  void DeleteNode(const std::string& name);
  // The pod watch (pods bound to a node). A terminal pod counts as deleted.
  void ReplacePods(std::vector<admit::Pod> pods);  // a (re)list: exactly these pods
  void UpsertPod(admit::Pod pod);
  void DeletePod(const admit::Pod& pod);

  // JudgeCached: the candidate (spec.nodeName set) against the cached node. With `assume`, an
  // allowed candidate is kept as assumed until the watch shows it or the time limit passes.
  NodeVerdict JudgeCached(const admit::Pod& candidate, bool assume);
  // JudgeSnapshot: the same against a node read just now (plus the pods assumed for it).
  NodeVerdict JudgeSnapshot(const admit::Pod& candidate, NodeSnapshot snapshot, bool assume);

  size_t AssumedPods();
  size_t Nodes();
  size_t Pods();

  // PodIdentity: metadata.uid, or NAMESPACE/NAME for an object without one.
  static std::string PodIdentity(const admit::Pod& pod);

 private:
  struct Assumed {
    admit::Pod pod;
    Clock::time_point expires;
  };
  struct NodeEntry {
    std::optional<admit::Node> node;
    std::map<std::string, admit::Pod> pods;  // by identity, as the watch shows them
    std::map<std::string, Assumed> assumed;  // by identity, allowed but not yet watched
    std::optional<admit::Checker> checker;   // node + pods + assumed, built on demand
  };

  admit::CheckOptions OptionsFor(const admit::Node& node) const;
  NodeEntry& Entry(const std::string& node_name);
  void DropEntryIfEmpty(const std::string& node_name);
  void ExpireAssumed(NodeEntry& entry);
  admit::Checker& CheckerFor(NodeEntry& entry);
  void RemovePodLocked(const std::string& identity);
  NodeVerdict JudgeLocked(const admit::Pod& candidate, admit::Checker& checker, NodeEntry& entry,
                          bool assume);

  const admit::CheckOptions options_;
  const Clock::duration assume_ttl_;
  const std::function<Clock::time_point()> now_;

  std::mutex mu_;
  std::map<std::string, NodeEntry, std::less<>> nodes_;
  std::map<std::string, std::string> pod_node_;  // pod identity -> node it is bound to
  size_t assumed_ = 0;
};

}  // namespace nodegate::webhook
