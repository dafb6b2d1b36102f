#pragma once
// Reading the cluster from the API server, as a client-go reflector's first list does
// (kube/reflector/reflector.h): resourceVersion=0 (the API server's watch cache, not a read of
// etcd), pages of `limit` followed by `continue`, each response taken apart as it arrives
// (kube/decode/list_stream.h) and each pod reduced to its facts at once (objects.h), so the
// 1.6 GB of a 150,000-pod list never sits in memory.
//
//   auto cluster = ReadCluster(client, {gates, timeout});
//   auto pod = GetObject(client, "/api/v1/namespaces/default/pods/web-0", "pod default/web-0",
//                        timeout);   // nullopt: 404

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "admit/framework/feature_gates.h"
#include "explain/cluster/cluster.h"
#include "kube/client/client.h"
#include "lib/base/result.h"

namespace nodegate::explain {

struct ReadOptions {
  admit::FeatureGates gates;
  // No byte for this long (the first included) ends a list or a read with an error.
  std::chrono::milliseconds timeout{30000};
  int page_size = 500;
  // Keep where the pods of this controller are ("DaemonSet ns/name"), for explain daemonset.
  std::string track_owner;
};

// ReadCluster: every node, then every pod. An error names what could not be read and why
// (the API server's own message for 401, 403, 5xx).
Result<Cluster> ReadCluster(kube::ApiClient& client, const ReadOptions& options);

// GetObject: one object; nullopt when the API server answers 404.
Result<std::optional<nlohmann::json>> GetObject(kube::ApiClient& client, const std::string& path,
                                                const std::string& what,
                                                std::chrono::milliseconds timeout);

// PodPath, DaemonSetPath: the object's URL path.
std::string PodPath(const std::string& ns, const std::string& name);
std::string DaemonSetPath(const std::string& ns, const std::string& name);

}  // namespace nodegate::explain
