// Real traffic through the shaped veth: iperf3 between the container and peer namespaces on
// the far side of the node (routed by the node), in both directions, at two rates; unshaped
// traffic for comparison; and unshapedSubnets/shapedSubnets showing both paths at their rates.
//
//   container 192.0.2.2 --veth-- node --veth-- peer A 198.51.100.2
//                                      \-veth-- peer B 203.0.113.2
//
// iperf3 reports TCP goodput; the TBF counts whole frames (14 + 20 + 32 header bytes per 1448
// payload bytes with timestamps), so goodput is scaled by 1514/1448 before comparing with the
// configured rate. The first second (slow start, burst) is omitted from the measurement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "tests/bandwidth/support.h"
#include "tests/support/background_process.h"

namespace nodegate::bandwidth::testing {
namespace {

using nodegate::testing::BackgroundProcess;
using nodegate::testing::WaitForListener;

constexpr double kFrameOverGoodput = 1514.0 / 1448.0;
constexpr int kSeconds = 3;
// Unshaped runs only have to be far faster than the rate: one second, nothing omitted.
constexpr int kQuickSeconds = 1;
// iperf3 runs per measurement before it counts as failed (each with a fresh server).
constexpr int kAttempts = 3;

// The receiver's goodput of an `iperf3 -J` client run, or nullopt when it failed. iperf3 3.12
// exits 0 with -J even when it could not connect (the JSON then holds "error"), so its exit
// status cannot tell.
std::optional<double> ReceivedBitsPerSecond(const std::string& iperf3_json) {
  const auto j = nlohmann::json::parse(iperf3_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.contains("error")) {
    return std::nullopt;
  }
  const auto bps = j.value("/end/sum_received/bits_per_second"_json_pointer, nlohmann::json());
  if (!bps.is_number()) {
    return std::nullopt;
  }
  return bps.get<double>();
}

struct Traffic {
  NodeWithContainer topo;
  Container peer_a, peer_b;
  int port = 5201 + (::getpid() % 1000);

  Traffic()
      : peer_a(AddContainer(topo.node, "198.51.100.2", "198.51.100.1")),
        peer_b(AddContainer(topo.node, "203.0.113.2", "203.0.113.1")) {
    topo.node.MustRun("sysctl -qw net.ipv4.ip_forward=1");
  }

  // Frame rate in bit/s from the container to `peer` (egress) or back (ingress, iperf3 -R).
  // Each attempt has a server of its own, started as our child and waited for by its
  // listening socket: a server shared by the attempts could be gone (one-off) or still busy
  // with the failed one, and a daemon gives no sign of when it listens.
  double Measure(const Container& peer, const std::string& peer_ip, bool to_container,
                 int seconds = kSeconds) {
    std::string failures;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      const int p = port++;
      BackgroundProcess server(*peer.ns,
                               {"iperf3", "-s", "-1", "-p", std::to_string(p), "-B", peer_ip});
      auto listening = WaitForListener(*peer.ns, "TCP", p, &server);
      if (!listening) {
        ADD_FAILURE() << "iperf3 server for " << peer_ip << ": " << listening.message();
        return 0;
      }
      auto r = topo.container.Run("iperf3 -J -c " + peer_ip + " -p " + std::to_string(p) + " -t " +
                                  std::to_string(seconds) + (seconds == kSeconds ? " -O 1" : "") +
                                  (to_container ? " -R" : ""));
      if (auto bps = ReceivedBitsPerSecond(r.output)) {
        const double rate = *bps * kFrameOverGoodput;
        std::printf("  iperf3 %s %s: %.0f bit/s (frames)\n",
                    to_container ? "to container from" : "from container to", peer_ip.c_str(),
                    rate);
        return rate;
      }
      const std::string failure = "attempt " + std::to_string(attempt) + ": " + r.output +
                                  "\nserver: " + server.Describe() + "\n";
      std::printf("  iperf3 to %s failed, %s", peer_ip.c_str(), failure.c_str());  // the log
      failures += failure;
    }
    ADD_FAILURE() << "iperf3 to " << peer_ip << (to_container ? " -R" : "") << ":\n" << failures;
    return 0;
  }

  std::string Conf(uint64_t rate, const std::string& extra = "") {
    const std::string r = std::to_string(rate);
    // A 16 KiB bucket: above the MTU, and small next to 3 s of traffic at these rates (a
    // 64 KiB one refills often enough to add ~10% at 4 Mbit/s over such a short run).
    const std::string fields = R"("ingressRate":)" + r + R"(,"ingressBurst":131072,"egressRate":)" +
                               r + R"(,"egressBurst":131072)" + extra;
    return BandwidthConf(topo, fields);
  }
};

// A token bucket never lets more than its rate through, so above the rate the bound is tight
// (10%: burst and timing). Below it is looser (20%): TCP through a small tail-drop queue loses
// packets and backs off, and on a busy 2-core machine the sender may also miss its slots; both
// lower the average, neither means a wrong rate (a bits-for-bytes slip is a factor of 8).
::testing::AssertionResult Near(double measured, double want) {
  const double error = std::fabs(measured - want) / want;
  const double allowed = measured > want ? 0.10 : 0.20;
  if (error <= allowed) {
    return ::testing::AssertionSuccess() << measured << " bit/s";
  }
  return ::testing::AssertionFailure() << "measured " << measured << " bit/s, configured " << want
                                       << " (" << error * 100 << "% off)";
}

TEST(BandwidthTrafficTest, BothDirectionsAtTwoRatesAndUnshapedFaster) {
  NG_REQUIRE_ROOT();
  Traffic t;
  for (uint64_t rate : {2'000'000ull, 8'000'000ull}) {
    SCOPED_TRACE("rate " + std::to_string(rate));
    const std::string conf = t.Conf(rate);
    ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", t.topo, conf)));
    EXPECT_TRUE(Near(t.Measure(t.peer_a, "198.51.100.2", /*to_container=*/true), rate));
    EXPECT_TRUE(Near(t.Measure(t.peer_a, "198.51.100.2", /*to_container=*/false), rate));
    ASSERT_TRUE(Succeeds(Invoke(Ours(), "DEL", t.topo, conf)));
  }
  // Without shaping the same path is far faster than either rate.
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", true, kQuickSeconds), 80'000'000);
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", false, kQuickSeconds), 80'000'000);
}

TEST(BandwidthTrafficTest, UnshapedSubnetsBypassTheShaper) {
  NG_REQUIRE_ROOT();
  Traffic t;
  const uint64_t rate = 4'000'000;
  const std::string conf = t.Conf(rate, R"(,"unshapedSubnets":["198.51.100.0/24"])");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", t.topo, conf)));
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "CHECK", t.topo, conf)));
  // Peer A is in an unshaped subnet, peer B is not.
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", true, kQuickSeconds), 10.0 * rate);
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", false, kQuickSeconds), 10.0 * rate);
  EXPECT_TRUE(Near(t.Measure(t.peer_b, "203.0.113.2", true), rate));
  EXPECT_TRUE(Near(t.Measure(t.peer_b, "203.0.113.2", false), rate));
  // No drops on the unshaped path from a zero-length queue (the reverted design's failure).
  const std::string stats = t.topo.node.MustRun("tc -s qdisc show dev " + t.topo.host_veth);
  EXPECT_EQ(stats.find("Warning"), std::string::npos) << stats;
}

TEST(BandwidthTrafficTest, ShapedSubnetsShapeOnlyThem) {
  NG_REQUIRE_ROOT();
  Traffic t;
  const uint64_t rate = 4'000'000;
  const std::string conf = t.Conf(rate, R"(,"shapedSubnets":["203.0.113.0/24"])");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", t.topo, conf)));
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "CHECK", t.topo, conf)));
  EXPECT_TRUE(Near(t.Measure(t.peer_b, "203.0.113.2", true), rate));
  EXPECT_TRUE(Near(t.Measure(t.peer_b, "203.0.113.2", false), rate));
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", true, kQuickSeconds), 10.0 * rate);
  EXPECT_GT(t.Measure(t.peer_a, "198.51.100.2", false, kQuickSeconds), 10.0 * rate);
}

}  // namespace
}  // namespace nodegate::bandwidth::testing
