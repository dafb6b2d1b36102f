#include "webhook/state/sources.h"

#include <nlohmann/json.hpp>

#include "admit/api/decode.h"
#include "kube/decode/list_stream.h"
#include "kube/decode/objects.h"
#include "lib/base/result.h"

namespace nodegate::webhook {
namespace {

constexpr size_t kMaxNodeReadBytes = 4u << 20;
constexpr size_t kMaxPodsReadBytes = 256u << 20;
// Pods that hold something on a node: bound, and neither Succeeded nor Failed.
constexpr std::string_view kBoundPodsSelector =
    "spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";

}  // namespace

kube::ReflectorOptions NodeWatch(const admit::FeatureGates& gates) {
  kube::ReflectorOptions options;
  options.kind = kube::Kind::kNode;
  options.path = "/api/v1/nodes";
  options.gates = gates;
  return options;
}

kube::ReflectorOptions PodWatch(const admit::FeatureGates& gates) {
  kube::ReflectorOptions options;
  options.kind = kube::Kind::kPod;
  options.path = "/api/v1/pods";
  options.field_selector = std::string(kBoundPodsSelector);
  options.gates = gates;
  return options;
}

Result<std::optional<NodeSnapshot>> ReadNode(kube::ApiClient& client,
                                             const admit::FeatureGates& gates,
                                             const std::string& node, Clock::time_point deadline) {
  NG_ASSIGN_OR_RETURN(
      auto got, client.Get("/api/v1/nodes/" + kube::UrlEncode(node), deadline, kMaxNodeReadBytes));
  if (got.status == 404) {
    return std::optional<NodeSnapshot>();
  }
  if (got.status != 200) {
    return Error(kErrIo, kube::StatusMessage("node " + node, got.status, got.body));
  }
  kube::ObjectDecoder decoder(gates);
  NG_ASSIGN_OR_RETURN(auto decoded, decoder.Node(got.body));
  NodeSnapshot snapshot;
  snapshot.node = *decoded.node;
  // resourceVersion=0: served from the API server's watch cache, indexed by spec.nodeName.
  NG_ASSIGN_OR_RETURN(auto pods, client.Get("/api/v1/pods?resourceVersion=0&fieldSelector=" +
                                                kube::UrlEncode("spec.nodeName=" + node),
                                            deadline, kMaxPodsReadBytes));
  if (pods.status != 200) {
    return Error(kErrIo, kube::StatusMessage("pods on node " + node, pods.status, pods.body));
  }
  kube::ListStream list([&](std::string_view item) {
    auto pod = decoder.Pod(item);
    if (pod.ok() && !pod->Terminal()) {
      snapshot.pods.push_back(std::move(pod->facts));
    }
  });
  NG_RETURN_IF_ERROR(list.Feed(pods.body));
  NG_RETURN_IF_ERROR(list.Finish());
  return std::optional<NodeSnapshot>(std::move(snapshot));
}

}  // namespace nodegate::webhook
