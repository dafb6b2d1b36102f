#pragma once
// ObjectDecoder: pods, nodes and watch events from the API server's JSON into the records a
// cluster cache keeps: a pod reduced to its PodFacts (admit/framework/pod_facts.h: a few
// hundred bytes instead of the several kilobytes of the object), a node to admit::Node.
//
// How: simdjson's On-Demand parser walks the object and copies out only the members that
// admit's decoder reads (the "projection" below; a pod's managedFields, env, probes, volumes,
// status conditions and nearly all annotations are skipped unread), into a small JSON tree
// that admit::DecodePod / DecodeNode then decode as they decode any pod. So there is one
// decoder of what a pod means (admit/api/decode.cc), and the fast part only chooses what to
// copy. kube/README.md says why simdjson and what it measured against nlohmann/json's SAX.
//
//   ObjectDecoder decoder(gates);
//   Result<PodRecord> pod = decoder.Pod(item_json);
//   Result<WatchEvent> event = decoder.Event(line, Kind::kPod);
//
// Not thread-safe: one decoder per thread (it reuses its parser's buffers).

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/pod_facts.h"
#include "lib/base/result.h"

namespace nodegate::kube {

enum class Kind { kNode, kPod };

struct PodRecord {
  admit::PodFactsPtr facts;  // what it holds on a node (also for a pod not bound yet)
  std::string node_name;     // spec.nodeName, "" while Pending
  std::string phase;         // status.phase
  std::string resource_version;
  // spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution as JSON text,
  // "" when the pod has none (most pods): what another pod must not match to join its domain.
  std::string required_anti_affinity;

  // Identity: metadata.uid, or NAMESPACE/NAME for an object without one.
  const std::string& Identity() const { return facts->uid.empty() ? facts->key : facts->uid; }
  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct NodeRecord {
  std::shared_ptr<const admit::Node> node;
  std::string resource_version;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  std::string resource_version;    // of the object, or of the bookmark
  std::optional<PodRecord> pod;    // ADDED/MODIFIED/DELETED of a pod
  std::optional<NodeRecord> node;  // ... of a node
  int error_code = 0;              // ERROR: the Status's code (410: the version is gone)
  std::string error_message;
  // Set when the event is well formed but its object is not a pod (node) admit can read:
  // why; `pod` and `node` are then empty.
  std::string unreadable;
};

// KnownFacts: a cache's facts for a pod of that uid at that resourceVersion, or null. A pod
// the cache already holds unchanged (a relist) is not decoded again.
using KnownFacts =
    std::function<admit::PodFactsPtr(std::string_view uid, std::string_view resource_version)>;

class ObjectDecoder {
 public:
  explicit ObjectDecoder(admit::FeatureGates gates);
  ~ObjectDecoder();
  ObjectDecoder(const ObjectDecoder&) = delete;
  ObjectDecoder& operator=(const ObjectDecoder&) = delete;

  Result<PodRecord> Pod(std::string_view json, const KnownFacts& known = nullptr);
  Result<NodeRecord> Node(std::string_view json);
  // Event: one line of a watch stream ({"type": ..., "object": ...}); an error when the line is
  // not such an event (broken JSON, an unknown type).
  Result<WatchEvent> Event(std::string_view line, Kind kind, const KnownFacts& known = nullptr);

  // PodProjection: what Pod() copies out of the object, as a JSON tree (for tests).
  Result<nlohmann::json> PodProjection(std::string_view json);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// PodRecordOf: the record of a pod already decoded (the review's candidate, a claim's pod).
PodRecord PodRecordOf(const admit::Pod& pod, const admit::FeatureGates& gates,
                      std::string resource_version = "");

}  // namespace nodegate::kube
