// The helper of bench/cluster-ipam/bench.sh, linked as the plugins are (static, lib/etcd):
//
//   cluster_ipam_bench txn CONF N         N compare-and-swap transactions on one warm TLS
//                                         connection; prints each one's microseconds
//   cluster_ipam_bench one-txn CONF       one such transaction on a new connection, then exit:
//                                         the floor of any static etcd client exec'd per call
//   cluster_ipam_bench populate CONF FIRST NODES PER_NODE THREADS
//                                         NODES x PER_NODE attachments added in-process
//                                         on nodes fill-FIRST, fill-FIRST+1, ...
//                                         (Allocator over one client per thread), to measure
//                                         the plugin at 10,000 allocated without 10,000 execs
//
// CONF is a cluster-ipam network config (its ipam.etcd section and pool).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ipam/cluster/allocator.h"
#include "ipam/cluster/config.h"
#include "lib/cni/conf.h"
#include "lib/etcd/client.h"
#include "lib/sys/io.h"
#include "lib/sys/prefault.h"

NODEGATE_PREFAULT_AT_START();

namespace {

using nodegate::Result;
namespace cluster = nodegate::ipam::cluster;

Result<cluster::ClusterConfig> Load(const char* path, const std::string& node = "") {
  NG_ASSIGN_OR_RETURN(std::string text, nodegate::sys::ReadRegularFile(path, 1 << 20));
  NG_ASSIGN_OR_RETURN(nodegate::cni::NetConf conf,
                      nodegate::cni::ParseNetConf(text, cluster::ConfigShape()));
  NG_ASSIGN_OR_RETURN(cluster::ClusterConfig cfg,
                      cluster::LoadClusterConfig(conf, "", cluster::Purpose::kAllocate,
                                                 cluster::NodeNameSources::FromProcess()));
  if (!node.empty()) cfg.node_name = node;
  return cfg;
}

int Fail(const nodegate::Error& e) {
  std::fprintf(stderr, "cluster_ipam_bench: %s\n", e.msg.c_str());
  return 1;
}

// A compare-and-swap of one key: read it, then write it only if unchanged.
Result<int64_t> Cas(nodegate::etcd::Kv& kv, const std::string& key, int64_t revision) {
  nodegate::etcd::TxnRequest txn;
  txn.compare = {nodegate::etcd::Compare::ModRevision(key, revision)};
  txn.success = {nodegate::etcd::PutRequest{key, "x"}};
  txn.failure = {nodegate::etcd::RangeRequest{.key = key}};
  NG_ASSIGN_OR_RETURN(nodegate::etcd::TxnResponse r, kv.Txn(txn));
  if (r.succeeded) return r.revision;
  const auto* now = r.RangeAt(0);
  return now && !now->kvs.empty() ? now->kvs[0].mod_revision : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cluster_ipam_bench txn|one-txn|populate CONF ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  auto cfg = Load(argv[2]);
  if (!cfg.ok()) return Fail(cfg.error());
  if (mode == "txn" || mode == "one-txn") {
    auto client = nodegate::etcd::Client::Create(cluster::ClientOptionsFor(*cfg, std::nullopt));
    if (!client.ok()) return Fail(client.error());
    const std::string key = cfg->keys().network_root() + "bench-floor";
    const int n = mode == "txn" ? std::atoi(argv[3]) : 1;
    int64_t revision = 0;
    for (int i = 0; i < n; ++i) {
      const auto start = std::chrono::steady_clock::now();
      auto next = Cas(**client, key, revision);
      if (!next.ok()) return Fail(next.error());
      revision = *next;
      if (mode == "txn") {
        std::printf("%lld\n",
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                               std::chrono::steady_clock::now() - start)
                                               .count()));
      }
    }
    return 0;
  }
  if (mode == "populate" && argc == 7) {
    const int first = std::atoi(argv[3]), nodes = std::atoi(argv[4]), per_node = std::atoi(argv[5]),
              threads = std::atoi(argv[6]);
    std::vector<std::thread> workers;
    std::vector<int> failed(threads, 0);
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int n = first + t; n < first + nodes; n += threads) {
          auto node_cfg = Load(argv[2], "fill-" + std::to_string(n));
          if (!node_cfg.ok()) {
            ++failed[t];
            continue;
          }
          auto client =
              nodegate::etcd::Client::Create(cluster::ClientOptionsFor(*node_cfg, std::nullopt));
          if (!client.ok()) {
            ++failed[t];
            continue;
          }
          for (int i = 0; i < per_node; ++i) {
            cluster::Allocator allocator(**client, *node_cfg);
            if (!allocator.Add("fill-" + std::to_string(n) + "-" + std::to_string(i), "eth0")
                     .ok()) {
              ++failed[t];
            }
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    int total = 0;
    for (int f : failed) total += f;
    if (total) std::fprintf(stderr, "cluster_ipam_bench populate: %d failed\n", total);
    return total == 0 ? 0 : 1;
  }
  std::fprintf(stderr, "cluster_ipam_bench: unknown mode %s\n", mode.c_str());
  return 2;
}
