// netns tier, against the built executable: portmap's UDP conntrack flush in every place the
// rules can live (iptables layout in nft and legacy mode, nftables backend).
//   - the guarantee: a UDP entry that sends a host port's traffic to a target that is gone
//     (after a re-ADD with another target, after DEL) does not outlive the call's helper (the
//     flush runs in the helper the plugin starts at exit), so the next datagram from the same
//     client and source port reaches the current target;
//   - the fixed cost: in a namespace that holds no conntrack entry, nothing is dumped (each
//     dump walks the kernel's whole conntrack hash, 262,144 buckets on this machine, whatever
//     the namespace holds): counted as the dump requests the plugin sends, read by strace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <tuple>

#include "tests/portmap/harness.h"

namespace nodegate::portmap::testing {
namespace {

// (backend key, iptables mode): "iptables" runs in the mode under test, "nftables" ignores it.
using Place = std::tuple<std::string, IptablesMode>;

class PortmapConntrack : public ::testing::TestWithParam<Place> {
 protected:
  void SetUp() override { UseIptablesMode(std::get<1>(GetParam())); }
  void TearDown() override { UseIptablesMode(IptablesMode::kNft); }
  const std::string& backend() const { return std::get<0>(GetParam()); }
};

std::string PlaceName(const ::testing::TestParamInfo<Place>& info) {
  const auto& [backend, mode] = info.param;
  if (backend == "nftables") return "nftables";
  return mode == IptablesMode::kNft ? "nft" : "legacy";
}

std::string UdpMapping(int host_port, int container_port) {
  return R"([{"hostPort":)" + std::to_string(host_port) + R"(,"containerPort":)" +
         std::to_string(container_port) + R"(,"protocol":"udp"}])";
}

// The node's UDP entries whose original destination port is `port`.
int UdpEntries(const TestNetns& node, int port) {
  return CountListed(node, "conntrack -L -f ipv4 -p udp --dport " + std::to_string(port));
}

// A stale entry made by real traffic: the client's datagrams from one source port keep the
// entry (and its NAT binding) alive, as a client that keeps sending does.
TEST_P(PortmapConntrack, NoStaleUdpEntryOutlivesReAddOrDel) {
  NG_REQUIRE_ROOT();
  Topology topo;
  // Two services in the container: the first ADD maps the host port to the first, the re-ADD
  // to the second (as a replaced pod at the same address would be).
  EchoServer before(topo.container.path(), 53, "before");
  EchoServer after(topo.container.path(), 54, "after");
  const std::string client = topo.client.path();
  constexpr int kHostPort = 5353, kSourcePort = 40000;
  const std::string prev = PrevResult(topo.container_ip4 + "/24", "");

  const std::string first = Conf(backend(), UdpMapping(kHostPort, 53), prev);
  ASSERT_EQ(PortmapAndHelper(topo.node, "ADD", "ctr1", first).exit_code, 0);
  ASSERT_EQ(UdpRequest(client, topo.node_client_ip4, kHostPort, 1500, kSourcePort), "before");
  ASSERT_EQ(UdpEntries(topo.node, kHostPort), 1);

  // Re-ADD towards port 54: the entry towards 53 (gone from the mapping) is flushed, so the
  // same client and source port reach the new target.
  const std::string second = Conf(backend(), UdpMapping(kHostPort, 54), prev);
  const auto readd = PortmapAndHelper(topo.node, "ADD", "ctr1", second);
  ASSERT_EQ(readd.exit_code, 0) << readd.out << readd.err;
  EXPECT_EQ(UdpEntries(topo.node, kHostPort), 0) << "after re-ADD";
  EXPECT_EQ(UdpRequest(client, topo.node_client_ip4, kHostPort, 1500, kSourcePort), "after");
  EXPECT_EQ(UdpEntries(topo.node, kHostPort), 1);

  // DEL: the container is gone; no entry keeps sending the host port's traffic to it.
  const auto del = PortmapAndHelper(topo.node, "DEL", "ctr1", second);
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(UdpEntries(topo.node, kHostPort), 0) << "after DEL";
  EXPECT_FALSE(UdpRequest(client, topo.node_client_ip4, kHostPort, 500, kSourcePort));
}

// Runs our portmap under strace and returns how many conntrack dump requests it sent: netlink
// messages of type IPCTNL_MSG_CT_GET in subsystem NFNL_SUBSYS_CTNETLINK with NLM_F_DUMP, as
// strace prints them raw (`nlmsg_type=0x1<<8|0x1, nlmsg_flags=0x301`, or `0x101` when strace
// has not yet learnt the socket's protocol). strace -f follows the helper the plugin starts at
// exit, where the flush runs, and ends when it does.
struct Traced {
  nodegate::testing::PluginOutput output;
  int dumps = 0;
  int stats = 0;  // IPCTNL_MSG_CT_GET_STATS requests (the count that decides)
};

Traced TracedPortmap(const TestNetns& node, const std::string& command, const std::string& conf) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("ng-ct-trace-" + std::to_string(::getpid()) + "-" + command);
  std::filesystem::create_directories(dir);
  const std::string trace = dir + "/trace";
  const std::string wrapper = dir + "/portmap";
  {
    std::ofstream script(wrapper);
    // LeakSanitizer cannot run under ptrace: the sanitizer build's portmap (make test's last
    // stage) would die at exit without this; everything else of ASan keeps working.
    script << "#!/bin/sh\nASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
           << "exec strace -f -qq -o " << trace << " -e trace=sendto,sendmsg -X raw -s 24 "
           << nodegate::testing::BinPath("portmap") << "\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  nodegate::testing::PluginCall call;
  call.binary = wrapper;
  call.command = command;
  call.container_id = "ctr-traced";
  call.netns = "/run/netns/ctr-traced";
  call.ifname = "eth0";
  call.stdin_data = conf;
  call.run_in_netns = node.path();
  Traced traced;
  traced.output = nodegate::testing::RunPlugin(call);
  std::ifstream in(trace);
  const std::regex stats(R"(nlmsg_type=(0x1<<8\|0x5|0x105),)");
  const std::regex dump(R"(nlmsg_type=(0x1<<8\|0x1|0x101), nlmsg_flags=0x3[0-9a-f]{2},)");
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, stats)) ++traced.stats;
    if (std::regex_search(line, dump)) ++traced.dumps;
  }
  std::filesystem::remove_all(dir);
  return traced;
}

TEST_P(PortmapConntrack, NothingIsDumpedWhenTheNamespaceHoldsNoEntry) {
  NG_REQUIRE_ROOT();
  if (nodegate::testing::RunCommand("command -v strace").exit_code != 0) {
    // (under CI a skip fails the test: scripts/run-test.py, tests/allowed_skips.txt)
    GTEST_SKIP() << "needs strace (scripts/install-deps.sh installs it)";
  }
  TestNetns node("ng-ctz");
  node.MustRun("ip link set lo up");
  const std::string conf =
      Conf(backend(), UdpMapping(5353, 53), PrevResult("10.88.0.9/16", "fd00:88::9/64"));
  ASSERT_EQ(UdpEntries(node, 5353), 0);
  for (const char* command : {"ADD", "DEL"}) {
    const Traced empty = TracedPortmap(node, command, conf);
    ASSERT_EQ(empty.output.exit_code, 0) << command << empty.output.out << empty.output.err;
    EXPECT_EQ(empty.dumps, 0) << command;
    EXPECT_EQ(empty.stats, 2) << command << ": one count per family";
  }
  // One entry of anything in the namespace, and both families are dumped again.
  node.MustRun(
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p tcp --sport 999 --dport 80 "
      "--state ESTABLISHED -t 600 2>/dev/null");
  const Traced busy = TracedPortmap(node, "ADD", conf);
  ASSERT_EQ(busy.output.exit_code, 0) << busy.output.out << busy.output.err;
  EXPECT_EQ(busy.dumps, 2);
  ASSERT_EQ(TracedPortmap(node, "DEL", conf).output.exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Places, PortmapConntrack,
                         ::testing::Values(Place{"iptables", IptablesMode::kNft},
                                           Place{"iptables", IptablesMode::kLegacy},
                                           Place{"nftables", IptablesMode::kNft}),
                         PlaceName);

}  // namespace
}  // namespace nodegate::portmap::testing
