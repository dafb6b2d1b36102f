// cluster-ipam killed (SIGKILL) at random points of ADD and DEL, on four nodes at once, against
// three real etcd members: whatever the kills interrupt, every write is one transaction, so
// afterwards `nodegate ipam check` finds nothing wrong (no duplicate, no half-written handle);
// GC with each node's live attachments leaves no leak (check with the runtime's cache agrees);
// the live attachments' repeated ADDs complete without sharing an address, and their DELs
// leave nothing. Kill points are uniform in [0, 1.3 x a full call's median time].
//
// Cycles: NODEGATE_CRASH_CYCLES (default 200; `make fuzz` runs its CRASH_CYCLES). The seed is
// printed; NODEGATE_CRASH_SEED replays one run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "runtime/chain/cache.h"
#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Json = nlohmann::json;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

constexpr int kNodes = 4;
constexpr int kIds = 8;  // containers per node

std::string Id(int node, int i) { return "n" + std::to_string(node) + "-k" + std::to_string(i); }
bool Live(int i) { return i % 2 == 0; }

TEST(CrashTest, KilledAtRandomPointsOfAddAndDelThenGcAndCheckLeaveNothingWrong) {
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.failure();
  auto conf = [&](int node) {
    return Conf(etcd, {.network = "crash",
                       .node = "node-" + std::to_string(node),
                       .ranges = R"([[{"subnet":"10.70.0.0/22","blockSize":28}],
                                     [{"subnet":"fd00:70::/64","blockSize":124}]])"});
  };
  // A full call's median time, for the kill window: measured as the soak runs them, one node
  // per thread at once (on a loaded machine a call takes several times its quiet time).
  std::vector<long> durations;
  std::mutex timing;
  std::vector<std::thread> calibration;
  for (int w = 0; w < kNodes; ++w) {
    calibration.emplace_back([&, w] {
      for (int i = 0; i < 3; ++i) {
        const auto start = std::chrono::steady_clock::now();
        ASSERT_EQ(Cni("ADD", conf(w), "calibrate" + std::to_string(w)).exit_code, 0);
        ASSERT_EQ(Cni("DEL", conf(w), "calibrate" + std::to_string(w)).exit_code, 0);
        std::lock_guard lock(timing);
        durations.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count() /
                            2);
      }
    });
  }
  for (auto& t : calibration) t.join();
  std::sort(durations.begin(), durations.end());
  const long median_us = durations[durations.size() / 2];

  const int cycles = EnvInt("NODEGATE_CRASH_CYCLES", 200);
  const unsigned seed = EnvInt("NODEGATE_CRASH_SEED", 0) != 0
                            ? static_cast<unsigned>(EnvInt("NODEGATE_CRASH_SEED", 0))
                            : std::random_device{}();
  std::cout << "cluster-ipam crash cycles: " << cycles << ", seed " << seed
            << " (NODEGATE_CRASH_SEED), call median " << median_us << " us\n";
  std::mutex mu;
  int killed = 0, finished = 0;
  std::vector<std::thread> workers;
  for (int w = 0; w < kNodes; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 random(seed + w);
      for (int c = w; c < cycles; c += kNodes) {
        const int i = static_cast<int>(random() % kIds);
        const bool add = random() % 3 != 0;
        const long kill_after = std::uniform_int_distribution<long>(0, median_us * 13 / 10)(random);
        const auto out = Cni(add ? "ADD" : "DEL", conf(w), Id(w, i), "eth0", kill_after);
        std::lock_guard lock(mu);
        if (out.killed) {
          ++killed;
        } else {
          ++finished;
          EXPECT_TRUE(out.exit_code == 0) << (add ? "ADD " : "DEL ") << Id(w, i) << ": " << out.out;
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  std::cout << "killed " << killed << " calls mid-way, " << finished << " finished; "
            << etcd.Dump("/nodegate/ipam/crash/handles/").size() << " handles left\n";
  EXPECT_GT(killed, cycles / 4) << "the kills should land inside the calls";

  // Whatever was interrupted, the store is consistent: nothing for check to report.
  EXPECT_EQ(ProblemKinds(conf(0)), std::vector<std::string>{});

  // The runtime's view of each node: its live attachments, in libcni's cache.
  char tmpl[] = "/tmp/ng-crash-cache-XXXXXX";
  const std::string cache_root = ::mkdtemp(tmpl);
  for (int n = 0; n < kNodes; ++n) {
    const std::string dir = cache_root + "/node-" + std::to_string(n);
    for (int i = 0; i < kIds; ++i) {
      if (!Live(i)) continue;
      runtime::CachedAttachment entry;
      entry.container_id = Id(n, i);
      entry.network_name = "crash";
      entry.ifname = "eth0";
      entry.config = R"({"cniVersion":"1.1.0","name":"crash","plugins":[]})";
      ASSERT_TRUE(runtime::WriteCacheEntry(dir, entry).ok());
    }
  }
  // GC on every node with its live attachments, then check each node against its cache.
  for (int n = 0; n < kNodes; ++n) {
    Json gc = Json::parse(conf(n));
    gc["cni.dev/valid-attachments"] = Json::array();
    for (int i = 0; i < kIds; ++i) {
      if (Live(i))
        gc["cni.dev/valid-attachments"].push_back({{"containerID", Id(n, i)}, {"ifname", "eth0"}});
    }
    const auto out = Cni("GC", gc.dump(), "");
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  }
  for (int n = 0; n < kNodes; ++n) {
    EXPECT_EQ(ProblemKinds(conf(n), {"--node", "node-" + std::to_string(n), "--cache-dir",
                                     cache_root + "/node-" + std::to_string(n)}),
              std::vector<std::string>{})
        << "node-" << n;
  }
  for (const auto& [key, value] : etcd.Dump("/nodegate/ipam/crash/handles/")) {
    const std::string handle = key.substr(key.rfind("/handles/") + 9);
    const int i = std::stoi(handle.substr(handle.find("-k") + 2));
    EXPECT_TRUE(Live(i)) << key << " survived GC";
  }

  // The live attachments' ADDs complete (idempotently where they were done), no address twice.
  std::set<std::string> addresses;
  for (int n = 0; n < kNodes; ++n) {
    for (int i = 0; i < kIds; i += 2) {
      const auto out = Cni("ADD", conf(n), Id(n, i));
      ASSERT_EQ(out.exit_code, 0) << out.out;
      for (const auto& ip : AddressesOf(out.out)) EXPECT_TRUE(addresses.insert(ip).second) << ip;
    }
  }
  EXPECT_EQ(addresses.size(), size_t{kNodes * kIds / 2 * 2});  // one per family each
  for (int n = 0; n < kNodes; ++n) {
    for (int i = 0; i < kIds; i += 2) ASSERT_EQ(Cni("DEL", conf(n), Id(n, i)).exit_code, 0);
  }
  EXPECT_TRUE(etcd.Dump("/nodegate/ipam/crash/handles/").empty());
  EXPECT_EQ(ProblemKinds(conf(0)), std::vector<std::string>{});
  std::filesystem::remove_all(cache_root);
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
