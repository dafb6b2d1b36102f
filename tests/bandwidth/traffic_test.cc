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

#include "tests/bandwidth/support.h"

namespace nodegate::bandwidth::testing {
namespace {

constexpr double kFrameOverGoodput = 1514.0 / 1448.0;
constexpr int kSeconds = 3;
// Unshaped runs only have to be far faster than the rate: one second, nothing omitted.
constexpr int kQuickSeconds = 1;

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
  double Measure(const Container& peer, const std::string& peer_ip, bool to_container,
                 int seconds = kSeconds) {
    const std::string p = std::to_string(port++);
    peer.ns->MustRun("iperf3 -s -1 -D -p " + p + " -B " + peer_ip);
    std::string out;
    for (int attempt = 0; attempt < 20; ++attempt) {  // the daemon needs a moment to listen
      auto r = topo.container.Run("iperf3 -J -c " + peer_ip + " -p " + p + " -t " +
                                  std::to_string(seconds) + (seconds == kSeconds ? " -O 1" : "") +
                                  (to_container ? " -R" : ""));
      out = r.output;
      if (r.exit_code == 0) {
        break;
      }
      topo.container.Run("sleep 0.1");
    }
    auto j = nlohmann::json::parse(out, nullptr, false);
    const nlohmann::json* bps = nullptr;
    if (!j.is_discarded() && j.contains("end") && j["end"].contains("sum_received")) {
      bps = &j["end"]["sum_received"]["bits_per_second"];
    }
    if (bps == nullptr || !bps->is_number()) {
      ADD_FAILURE() << "iperf3 to " << peer_ip << (to_container ? " -R" : "") << ": " << out;
      return 0;
    }
    const double rate = bps->get<double>() * kFrameOverGoodput;
    std::printf("  iperf3 %s %s: %.0f bit/s (frames)\n",
                to_container ? "to container from" : "from container to", peer_ip.c_str(), rate);
    return rate;
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
