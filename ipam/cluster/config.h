#pragma once
// cluster-ipam's configuration: the "ipam" object of the network config, parsed, defaulted
// and validated in one step before any connection.
//
//   "ipam": {
//     "type": "cluster-ipam",
//     "ranges": [[{"subnet": "10.244.0.0/16", "blockSize": 26}],
//                [{"subnet": "fd00:244::/48", "blockSize": 122}]],
//     "routes": [{"dst": "0.0.0.0/0"}],
//     "nodeName": "node-1",
//     "strictAffinity": false,
//     "etcd": {"endpoints": ["https://127.0.0.1:2379"], "caFile": "...", "certFile": "...",
//              "keyFile": "...", "prefix": "/nodegate/ipam", "timeout": "5s"}
//   }
//
// "ranges" (and host-local's legacy top-level range), "routes" and "resolvConf" are read by
// host-local's own parsers (ipam/config.h), so their syntax, defaults and errors are
// host-local's. On top: "blockSize" per range (default 26 for IPv4, 122 for IPv6, or the
// range's subnet when that is smaller), every range its own subnet, and no two subnets of the
// pool overlapping (blocks are named by CIDR across the whole pool).
//
// Error codes: 6 for a key of the wrong JSON type, 7 for invalid values, 2 for inputs
// cluster-ipam does not take (requested addresses, the ipRanges capability), 4 for a
// malformed CNI_ARGS.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "ipam/cluster/keys.h"
#include "ipam/cluster/pool.h"
#include "ipam/cluster/records.h"
#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"
#include "lib/etcd/client.h"

namespace nodegate::ipam::cluster {

inline constexpr std::string_view kDefaultAgentSocket = "/run/nodegate/cluster-ipam.sock";
inline constexpr std::string_view kDefaultLockDir = "/run/nodegate/cluster-ipam";

struct EtcdConfig {
  std::vector<std::string> endpoints;
  etcd::TlsFiles tls;
  std::string prefix = std::string(kDefaultPrefix);
  std::string username;
  std::string password;
  std::chrono::milliseconds timeout{5000};
  std::chrono::milliseconds dial_timeout{1000};
  std::chrono::milliseconds request_timeout{2000};
};

// What the config is loaded for: DEL and GC need only the network's name, the node and etcd
// (a DEL must release what it can whatever else its config says).
enum class Purpose { kAllocate, kRelease };

struct ClusterConfig {
  std::string cni_version;
  std::string network_name;
  Pool pool;  // empty for kRelease when the ranges could not be read
  std::vector<cni::Route> routes;
  std::string resolv_conf;
  std::string node_name;
  bool strict_affinity = false;
  EtcdConfig etcd;
  PodAttributes pod;
  // The node-local agent's socket (agent.h); empty: never ask an agent.
  std::string agent_socket = std::string(kDefaultAgentSocket);
  // Where the node lock lives: <lock_dir>/<node_name>.lock (plugin.h).
  std::string lock_dir = std::string(kDefaultLockDir);

  Keys keys() const { return Keys(etcd.prefix, network_name); }
};

// Where nodeName comes from when the config has none: $KUBERNETES_NODE_NAME, then the host
// name (uname's nodename).
struct NodeNameSources {
  std::string environment;
  std::string hostname;
  static NodeNameSources FromProcess();
};

// The shape the dispatcher decodes stdin with (lib/cni/go_json.h): host-local's keys plus ours.
const cni::gojson::Shape& ConfigShape();

Result<ClusterConfig> LoadClusterConfig(const cni::NetConf& conf, std::string_view cni_args,
                                        Purpose purpose, const NodeNameSources& node_sources);

// The validation ADD runs before its first connection, without per-call inputs: for
// `nodegate conf validate` (the etcd files are not read, the node name may come from the host).
Status ValidateConfig(const cni::NetConf& conf);

// The etcd client options of a config: the plugin's verb never outlives `deadline`, and nodes
// start at different members (by node name).
etcd::ClientOptions ClientOptionsFor(const ClusterConfig& cfg,
                                     std::optional<etcd::Deadline> deadline);

}  // namespace nodegate::ipam::cluster
