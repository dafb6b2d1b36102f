// portmap with the iptables layout, in private namespaces, in both iptables modes (nf_tables
// in iptables-nft's encoding, and the legacy x_tables through libiptc), each chosen the way the
// reference chooses it, from the iptables on PATH: real traffic, the differential against
// Debian's reference plugin (same tables, same iptables-save output), switching between the
// two, concurrency with another iptables user, rollback, bad input, re-ADD, CHECK, GC and the
// UDP conntrack flush.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/portmap/harness.h"

namespace nodegate::portmap::testing {
namespace {

// Every test runs in both iptables modes: nft first (the node's default here and on current
// distributions), then legacy.
class PortmapIptables : public ::testing::TestWithParam<IptablesMode> {
 protected:
  void SetUp() override { UseIptablesMode(GetParam()); }
  void TearDown() override { UseIptablesMode(IptablesMode::kNft); }
};

std::string ContainerRules(const std::string& save) {
  std::string out;
  std::istringstream in(save);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("CNI-DN-") != std::string::npos) out += line + "\n";
  }
  return out;
}

TEST_P(PortmapIptables, RealTraffic) {
  NG_REQUIRE_ROOT();
  RunTrafficScenario("iptables");
}

// The same calls on two fresh nodes, one running the reference and one ours: identical
// iptables-save and ip6tables-save output (of the mode under test).
TEST_P(PortmapIptables, SameTablesAsTheReference) {
  NG_REQUIRE_ROOT();
  struct Call {
    std::string id;
    std::string conf;
  };
  std::string sixteen = "[";
  for (int i = 0; i < 16; ++i) {
    sixteen += (i ? "," : "") + std::string(R"({"hostPort":)") + std::to_string(9100 + i) +
               R"(,"containerPort":80,"protocol":"tcp"})";
  }
  sixteen += "]";
  const std::vector<std::vector<Call>> scenarios = {
      {{"ctr1", Conf("", kMappings, kPrev)},
       {"ctr2", Conf("",
                     R"([{"hostPort":9090,"containerPort":90,"protocol":"tcp"},)"
                     R"({"hostPort":9091,"containerPort":91,"protocol":"sctp"}])",
                     PrevResult("10.88.0.3/16", ""))}},
      {{"ctr3", Conf("", sixteen, PrevResult("10.88.0.4/16", ""))}},
      {{"ctr4", Conf("", kMappings, kPrev, R"(,"conditionsV4":["!","-d","192.0.2.0/24"])")}},
      {{"ctr5", Conf("", kMappings, kPrev, R"(,"markMasqBit":5)")}},
      {{"ctr6", Conf("", kMappings, kPrev, R"(,"snat":false)")}},
      {{"ctr7",
        Conf("", R"([{"hostPort":7000,"containerPort":70,"protocol":"udp","hostIP":"0.0.0.0"}])",
             kPrev)}},
  };
  for (const auto& calls : scenarios) {
    TestNetns reference_node("ng-pmref");
    TestNetns our_node("ng-pmour");
    for (const auto& call : calls) {
      const auto ref = Portmap(reference_node, "ADD", call.id, call.conf, /*reference=*/true);
      ASSERT_EQ(ref.exit_code, 0) << ref.out << ref.err;
      const auto ours = Portmap(our_node, "ADD", call.id, call.conf);
      ASSERT_EQ(ours.exit_code, 0) << ours.out << ours.err;
    }
    EXPECT_EQ(SaveNat(our_node), SaveNat(reference_node)) << calls.front().conf;
    EXPECT_EQ(SaveNat(our_node, true), SaveNat(reference_node, true)) << calls.front().conf;
    EXPECT_NE(ContainerRules(SaveNat(our_node)), "");
  }
}

// A node can switch plugins in either direction: each side checks and removes the other's
// rules.
TEST_P(PortmapIptables, SwitchesWithTheReference) {
  NG_REQUIRE_ROOT();
  const std::string conf = Conf("", kMappings, kPrev);
  {
    TestNetns node("ng-pmsw");
    ASSERT_EQ(Portmap(node, "ADD", "ctr1", conf, true).exit_code, 0);
    ASSERT_EQ(Portmap(node, "ADD", "ctr2",
                      Conf("", R"([{"hostPort":81,"containerPort":80,"protocol":"tcp"}])",
                           PrevResult("10.88.0.3/16", "")),
                      true)
                  .exit_code,
              0);
    const auto check = Portmap(node, "CHECK", "ctr1", conf);
    EXPECT_EQ(check.exit_code, 0) << check.out;
    const auto del = Portmap(node, "DEL", "ctr1", conf);
    ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
    for (bool v6 : {false, true}) {
      const std::string save = SaveNat(node, v6);
      EXPECT_EQ(CountLines(save, "ctr1"), 0) << save;
      EXPECT_EQ(CountLines(save, "CNI-DN-6ef8579d92ac413d65a3e"), 0) << save;
    }
    EXPECT_EQ(CountLines(SaveNat(node), "ctr2"), 1) << "the other container's rules stay";
  }
  {
    TestNetns node("ng-pmsw");
    ASSERT_EQ(Portmap(node, "ADD", "ctr1", conf).exit_code, 0);
    const auto del = Portmap(node, "DEL", "ctr1", conf, true);
    ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
    for (bool v6 : {false, true}) {
      const std::string save = SaveNat(node, v6);
      EXPECT_EQ(CountLines(save, "CNI-DN-"), 0) << save;
    }
  }
}

// 50 ADDs and DELs in parallel while another process appends and deletes its own rules with
// the mode's iptables: every party's rules are there afterwards, and nothing else.
TEST_P(PortmapIptables, ConcurrentWithAnotherIptablesUser) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmcc");
  node.MustRun(IptablesTool() + " -w -t nat -N OTHER-PARTY");
  // The other party: 120 rounds of append two, delete one; 120 rules remain.
  const std::string ipt = IptablesTool() + " -w -t nat ";
  const std::string loop =
      "for i in $(seq 1 120); do " + ipt +
      "-A OTHER-PARTY -s 203.0.113.$((i % 250))/32 -j RETURN -m comment --comment keep$i && " +
      ipt +
      "-A OTHER-PARTY -d 203.0.113.$((i % 250))/32 -j RETURN -m comment --comment drop$i && " +
      ipt + "-D OTHER-PARTY -d 203.0.113.$((i % 250))/32 -j RETURN -m comment --comment drop$i " +
      "|| exit 1; done";
  std::atomic<int> other_rc{-1};
  std::thread other([&] { other_rc = node.Run(loop).exit_code; });

  constexpr int kContainers = 50;
  std::vector<std::string> confs(kContainers);
  std::vector<int> add_rc(kContainers, -1), del_rc(kContainers, -1);
  std::vector<std::string> add_out(kContainers), del_out(kContainers);
  for (int i = 0; i < kContainers; ++i) {
    confs[i] = Conf("iptables",
                    "[{\"hostPort\":" + std::to_string(20000 + i) +
                        ",\"containerPort\":80,\"protocol\":\"tcp\"}]",
                    PrevResult("198.51.100." + std::to_string(10 + i) + "/24", ""));
  }
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < kContainers; i = next++) {
        const std::string id = "cc" + std::to_string(i);
        const auto add = Portmap(node, "ADD", id, confs[i]);
        add_rc[i] = add.exit_code;
        add_out[i] = add.out + add.err;
        // Every other container goes away again.
        if (i % 2 == 1) {
          const auto del = Portmap(node, "DEL", id, confs[i]);
          del_rc[i] = del.exit_code;
          del_out[i] = del.out + del.err;
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  other.join();
  ASSERT_EQ(other_rc, 0);

  const std::string save = SaveNat(node);
  EXPECT_EQ(CountLines(save, "-A OTHER-PARTY"), 120) << save;
  EXPECT_EQ(CountLines(save, "--comment drop"), 0);
  for (int i = 0; i < kContainers; ++i) {
    EXPECT_EQ(add_rc[i], 0) << "ADD " << i << ": " << add_out[i];
    const std::string comment = "id: \\\"cc" + std::to_string(i) + "\\\"\"";
    if (i % 2 == 1) {
      EXPECT_EQ(del_rc[i], 0) << "DEL " << i << ": " << del_out[i];
      EXPECT_EQ(CountLines(save, comment), 0) << "deleted container " << i << " left rules";
    } else {
      EXPECT_EQ(CountLines(save, comment), 1) << "container " << i << " lost its entry rule";
      EXPECT_EQ(CountLines(save, "--dport " + std::to_string(20000 + i) + " -j DNAT"), 1);
    }
  }
  // 25 containers x (2 mark rules + DNAT) + 25 entry rules, and the shared rules once.
  EXPECT_EQ(CountLines(save, "-A CNI-DN-"), 25 * 3);
  EXPECT_EQ(CountLines(save, "-A CNI-HOSTPORT-DNAT"), 25);
  EXPECT_EQ(CountLines(save, "-A PREROUTING"), 1);
  EXPECT_EQ(CountLines(save, "-A OUTPUT"), 1);
  EXPECT_EQ(CountLines(save, "-A POSTROUTING"), 1);
  EXPECT_EQ(CountLines(save, "-A CNI-HOSTPORT-SETMARK"), 1);
  EXPECT_EQ(CountLines(save, "-A CNI-HOSTPORT-MASQ"), 1);
}

// IPv4 commits, IPv6 fails (the external mark chain exists only in IPv4): the IPv4 rules are
// rolled back and the plugin reports the error.
TEST_P(PortmapIptables, FailureHalfWayLeavesNoRule) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmrb");
  node.MustRun(IptablesTool() + " -t nat -N EXT-MARK");
  const std::string conf = Conf("", kMappings, kPrev, R"(,"externalSetMarkChain":"EXT-MARK")");
  const auto add = Portmap(node, "ADD", "ctr1", conf);
  EXPECT_EQ(add.exit_code, 1) << add.out;
  EXPECT_NE(add.out.find("ip6tables"), std::string::npos) << add.out;
  for (bool v6 : {false, true}) {
    const std::string save = SaveNat(node, v6);
    EXPECT_EQ(CountLines(save, "CNI-DN-"), 0) << save;
  }
}

TEST_P(PortmapIptables, BadInputChangesNothing) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmbad");
  ASSERT_EQ(Portmap(node, "ADD", "keep", Conf("iptables", kMappings, kPrev)).exit_code, 0);
  const std::string before = SaveNatBothFamilies(node);
  const std::vector<std::string> bad = {
      Conf("iptables", R"([{"hostPort":0,"containerPort":80,"protocol":"tcp"}])", kPrev),
      Conf("iptables", R"([{"hostPort":65536,"containerPort":80,"protocol":"tcp"}])", kPrev),
      Conf("iptables", R"([{"hostPort":80,"containerPort":80,"protocol":"icmp"}])", kPrev),
      Conf("iptables",
           R"([{"hostPort":80,"containerPort":80,"protocol":"tcp","hostIP":"2001:db8::1"}])",
           PrevResult("10.88.0.2/16", "")),
      Conf("iptables", kMappings, kPrev, R"(,"conditionsV4":["ip","saddr","192.0.2.1"])"),
      Conf("iptables", kMappings, kPrev, R"(,"markMasqBit":40)"),
      Conf("", kMappings, ""),
  };
  ExpectEachRefusedAsInvalid(node, bad);
  EXPECT_EQ(SaveNatBothFamilies(node), before);
}

TEST_P(PortmapIptables, ReAddReplacesCheckFindsGapsAndGcRemovesStale) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmre");
  const std::string first = Conf("iptables", kMappings, kPrev);
  const std::string second =
      Conf("iptables", R"([{"hostPort":9999,"containerPort":99,"protocol":"tcp"}])", kPrev);
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", first).exit_code, 0);
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", second).exit_code, 0);
  std::string save = SaveNat(node);
  EXPECT_EQ(CountLines(save, "8080"), 0) << "re-ADD must replace\n" << save;
  EXPECT_EQ(CountLines(save, "--dport 9999 -j DNAT"), 1) << save;
  EXPECT_EQ(Portmap(node, "CHECK", "ctr1", second).exit_code, 0);
  EXPECT_NE(Portmap(node, "CHECK", "ctr1", first).exit_code, 0);

  // A rule removed behind the plugin's back is a CHECK failure (code 103).
  node.MustRun(IptablesTool() + " -t nat -D CNI-DN-6ef8579d92ac413d65a3e 3");
  const auto check = Portmap(node, "CHECK", "ctr1", second);
  EXPECT_NE(check.exit_code, 0);
  EXPECT_NE(check.out.find("\"code\": 103"), std::string::npos) << check.out;

  // GC keeps valid attachments of this network and drops the others (not other networks').
  ASSERT_EQ(Portmap(node, "ADD", "ctr2", Conf("iptables", kMappings, kPrev)).exit_code, 0);
  ASSERT_EQ(Portmap(node, "ADD", "ctr3", Conf("iptables", kMappings, kPrev)).exit_code, 0);
  ASSERT_EQ(
      Portmap(node, "ADD", "ctr3", Conf("iptables", kMappings, kPrev, "", "othernet")).exit_code,
      0);
  const std::string gc =
      R"({"cniVersion":"1.1.0","name":"rnet","type":"portmap","backend":"iptables",)"
      R"("cni.dev/valid-attachments":[{"containerID":"ctr2","ifname":"eth0"}]})";
  const auto out = Portmap(node, "GC", "", gc);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  save = SaveNatBothFamilies(node);
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr1\")"), 0) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr3\")"), 0) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr2\")"), 4) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"othernet\" id: \"ctr3\")"), 4) << save;
  EXPECT_EQ(Portmap(node, "STATUS", "", gc).exit_code, 0);
}

TEST_P(PortmapIptables, DelWithoutNetnsOrPrevResult) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmdel");
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", Conf("iptables", kMappings, kPrev)).exit_code, 0);
  nodegate::testing::PluginCall call;
  call.binary = nodegate::testing::BinPath("portmap");
  call.command = "DEL";
  call.container_id = "ctr1";
  call.ifname = "eth0";
  call.stdin_data = Conf("iptables", kMappings, "");
  call.run_in_netns = node.path();
  const auto del = nodegate::testing::RunPlugin(call);
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(CountLines(SaveNatBothFamilies(node), "CNI-DN-"), 0);
}

// A runtime stops tearing down a chain at the first failing DEL, so a DEL whose config cannot
// be read (containerd's Go-cased keys read by an older build, a corrupt cached prevResult)
// still removes what the container owns, found by network name and container ID, and nothing
// else. The reference fails these DELs.
TEST_P(PortmapIptables, DelWithAnUnreadableConfigRemovesTheContainersRules) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmbad");
  ASSERT_EQ(Portmap(node, "ADD", "other",
                    Conf("iptables", R"([{"hostPort":9999,"containerPort":99,"protocol":"tcp"}])",
                         PrevResult("10.88.0.9/16", "")))
                .exit_code,
            0);
  const int others = CountLines(SaveNatBothFamilies(node), "CNI-DN-");
  ASSERT_GT(others, 0);
  const std::vector<std::string> unreadable = {
      Conf("", R"([{"hostPort":"x","containerPort":80,"protocol":"tcp"}])", kPrev),
      Conf("", kMappings, R"({"cniVersion":"1.0.0","ips":[{"address":"garbage"}]})"),
      Conf("", kMappings, "[1,2]", R"(,"markMasqBit":99)"),
      Conf("bogus", "7", kPrev),
  };
  for (const std::string& bad : unreadable) {
    SCOPED_TRACE(bad);
    ASSERT_EQ(Portmap(node, "ADD", "ctr1", Conf("iptables", kMappings, kPrev)).exit_code, 0);
    const auto del = Portmap(node, "DEL", "ctr1", bad);
    EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
    const std::string save = SaveNatBothFamilies(node);
    EXPECT_EQ(CountLines(save, R"(id: \"ctr1\")"), 0) << save;
    EXPECT_EQ(CountLines(save, "CNI-DN-"), others) << save;
  }
}

// A UDP conntrack entry towards the host port, made before the mapping existed, would keep
// the client away from the container; ADD flushes it (in the helper it starts at exit).
TEST_P(PortmapIptables, AddFlushesStaleUdpConntrack) {
  NG_REQUIRE_ROOT();
  Topology topo;
  EchoServer server(topo.container.path(), 53, "dns");
  const std::string client = topo.client.path();
  // Conntrack is active on a real node (kube-proxy, firewalls); make it so in this one.
  topo.node.MustRun(IptablesTool() + " -A INPUT -m conntrack --ctstate INVALID -j DROP");
  // No mapping yet: the datagram goes to the node itself and leaves a conntrack entry.
  EXPECT_FALSE(UdpRequest(client, topo.node_client_ip4, 5353, 300, 40000));
  EXPECT_EQ(CountListed(topo.node, "conntrack -L -p udp --dport 5353", "5353"), 1);
  // Entries of another UDP port and of TCP to the same port are not the plugin's business.
  topo.node.MustRun(
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p udp --sport 999 --dport 5354 -t 600 && "
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p tcp --sport 999 --dport 5353 "
      "--state ESTABLISHED -t 600");
  const std::string conf =
      Conf("iptables", R"([{"hostPort":5353,"containerPort":53,"protocol":"udp"}])",
           PrevResult(topo.container_ip4 + "/24", ""));
  ASSERT_EQ(PortmapAndHelper(topo.node, "ADD", "ctr1", conf).exit_code, 0);
  EXPECT_EQ(UdpRequest(client, topo.node_client_ip4, 5353, 1500, 40000), "dns");
  ASSERT_EQ(PortmapAndHelper(topo.node, "DEL", "ctr1", conf).exit_code, 0);
  EXPECT_EQ(CountListed(topo.node, "conntrack -L -p udp --dport 5353", "5353"), 0);
  EXPECT_EQ(CountListed(topo.node, "conntrack -L -p udp --dport 5354", "5354"), 1);
  EXPECT_EQ(CountListed(topo.node, "conntrack -L -p tcp --dport 5353", "5353"), 1);
}

// A pod author controls how many host ports a pod has: 2,000 UDP mappings install (one
// transaction), flush the stale UDP entries of exactly those ports (one conntrack dump, not one
// per port: that took 6.5 s), CHECK, and go away on DEL.
TEST_P(PortmapIptables, TwoThousandUdpPorts) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmudp");
  node.MustRun("ip link set lo up");
  constexpr int kFirst = 20000, kPorts = 2000;
  std::string mappings = "[";
  for (int i = 0; i < kPorts; ++i) {
    mappings += std::string(i ? "," : "") + R"({"hostPort":)" + std::to_string(kFirst + i) +
                R"(,"containerPort":53,"protocol":"udp"})";
  }
  mappings += "]";
  const std::string stale =
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p udp --sport 999 -t 600 --dport ";
  node.MustRun(stale + std::to_string(kFirst) + " && " + stale +
               std::to_string(kFirst + kPorts - 1) + " && " + stale +
               std::to_string(kFirst + kPorts) + " 2>/dev/null");
  auto entries = [&](int port) {
    return CountListed(node, "conntrack -L -f ipv4 -p udp --dport " + std::to_string(port));
  };
  const std::string conf = Conf("iptables", mappings, PrevResult("10.88.0.9/16", ""));
  const auto add = PortmapAndHelper(node, "ADD", "ctr1", conf);
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(entries(kFirst), 0);
  EXPECT_EQ(entries(kFirst + kPorts - 1), 0);
  EXPECT_EQ(entries(kFirst + kPorts), 1);  // not a port of the pod
  const std::string save = SaveNat(node);
  EXPECT_EQ(CountLines(save, "-j DNAT"), kPorts) << save.substr(0, 2000);
  EXPECT_EQ(Portmap(node, "CHECK", "ctr1", conf).exit_code, 0);
  ASSERT_EQ(Portmap(node, "DEL", "ctr1", conf).exit_code, 0);
  EXPECT_EQ(CountLines(SaveNat(node), "CNI-DN-"), 0);
}

// kube-proxy's KUBE-MARK-MASQ, made by the node's own iptables, as the external mark chain:
// ADD jumps to it in both families, CHECK passes, the reference's DEL removes our rules.
TEST_P(PortmapIptables, ExternalMarkChainMadeByTheNodesIptables) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmkm");
  for (bool v6 : {false, true}) node.MustRun(IptablesTool(v6) + " -t nat -N KUBE-MARK-MASQ");
  const std::string conf =
      Conf("", kMappings, kPrev, R"(,"externalSetMarkChain":"KUBE-MARK-MASQ")");
  const auto add = Portmap(node, "ADD", "ctr1", conf);
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(CountLines(SaveNat(node), "-j KUBE-MARK-MASQ"), 4) << SaveNat(node);
  EXPECT_EQ(CountLines(SaveNat(node, true), "-j KUBE-MARK-MASQ"), 1) << SaveNat(node, true);
  EXPECT_EQ(CountLines(SaveNat(node), "CNI-HOSTPORT-SETMARK"), 0);
  EXPECT_EQ(Portmap(node, "CHECK", "ctr1", conf).exit_code, 0);
  const auto del = Portmap(node, "DEL", "ctr1", conf, /*reference=*/true);
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(CountLines(SaveNatBothFamilies(node), "CNI-DN-"), 0);
  EXPECT_EQ(CountLines(SaveNat(node), ":KUBE-MARK-MASQ"), 1);
}

// `iptables -C` (what the reference's CHECK and DEL use) finds every rule we wrote, sctp
// included: the same match data as the iptables tools write, byte for byte.
TEST_P(PortmapIptables, IptablesChecksEveryRuleWeWrote) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmchk");
  const std::string conf =
      Conf("",
           R"([{"hostPort":9091,"containerPort":91,"protocol":"sctp"},)"
           R"({"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"10.88.0.1"},)"
           R"({"hostPort":5353,"containerPort":53,"protocol":"udp"}])",
           kPrev);
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", conf).exit_code, 0);
  int checked = 0;
  for (bool v6 : {false, true}) {
    std::istringstream lines(SaveNat(node, v6));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("-A ", 0) != 0) continue;
      const auto r = node.Run(IptablesTool(v6) + " -t nat -C " + line.substr(3));
      EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.output;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Modes, PortmapIptables,
                         ::testing::Values(IptablesMode::kNft, IptablesMode::kLegacy),
                         ModeParamName);

}  // namespace

}  // namespace nodegate::portmap::testing

namespace nodegate::portmap::testing {
namespace {

// Which tables the layout lands in, chosen as the reference's iptables would be.
class IptablesModeChoice : public ::testing::Test {
 protected:
  // Runs our ADD with PATH=`path` (the runtime's PATH decides, as it does for the reference).
  PluginOutput AddWithPath(const TestNetns& node, const std::string& path,
                           const std::string& extra = "") {
    nodegate::testing::PluginCall call;
    call.binary = nodegate::testing::BinPath("portmap");
    call.command = "ADD";
    call.container_id = "ctr1";
    call.netns = "/run/netns/ctr-ctr1";
    call.ifname = "eth0";
    call.stdin_data = Conf("", kMappings, kPrev, extra);
    call.run_in_netns = node.path();
    call.extra_env["PATH"] = path;
    return nodegate::testing::RunPlugin(call);
  }
  static int NftRules(const TestNetns& node) {
    return CountLines(node.Run("iptables-nft-save -t nat 2>/dev/null").output, "-A CNI-DN-");
  }
  static bool LegacyNatLoaded(const TestNetns& node) {
    return node.Run("grep -qx nat /proc/net/ip_tables_names").exit_code == 0;
  }
};

TEST_F(IptablesModeChoice, TheNodesIptablesDecidesAndLegacyTablesAreNotCreated) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmmode");
  // What this machine's `iptables` is (Debian 12's default: iptables-nft).
  const bool nft = node.MustRun("iptables --version").find("nf_tables") != std::string::npos;
  ASSERT_EQ(AddWithPath(node, "/usr/sbin:/usr/bin:/sbin:/bin").exit_code, 0);
  EXPECT_EQ(NftRules(node), nft ? 6 : 0);
  if (nft) {
    EXPECT_FALSE(LegacyNatLoaded(node)) << "choosing the mode must not load iptable_nat";
  }
  // The operator's own view lists them, whichever iptables the node has.
  EXPECT_EQ(CountLines(node.MustRun("iptables -t nat -S"), "-A CNI-HOSTPORT-DNAT"), 2);
}

TEST_F(IptablesModeChoice, WithoutAnIptablesBinaryTheNodesChainsDecide) {
  NG_REQUIRE_ROOT();
  {
    // The kubelet's hint in nf_tables beats CNI chains in x_tables.
    TestNetns node("ng-pmhint");
    node.MustRun("iptables-legacy -t nat -N CNI-HOSTPORT-DNAT");
    node.MustRun("iptables-nft -t mangle -N KUBE-IPTABLES-HINT");
    const auto add = AddWithPath(node, "/nonexistent");
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    EXPECT_EQ(NftRules(node), 6);
  }
  {
    // Only the legacy tables hold this layout: the rules join them.
    TestNetns node("ng-pmleg");
    node.MustRun("iptables-legacy -t nat -N CNI-HOSTPORT-DNAT");
    const auto add = AddWithPath(node, "/nonexistent");
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    EXPECT_EQ(NftRules(node), 0);
    EXPECT_EQ(CountLines(node.MustRun("iptables-legacy-save -t nat"), "-A CNI-DN-"), 6);
  }
  {
    // Nothing to go by: nf_tables, and no legacy table is created.
    TestNetns node("ng-pmnone");
    ASSERT_EQ(AddWithPath(node, "/nonexistent").exit_code, 0);
    EXPECT_EQ(NftRules(node), 6);
    EXPECT_FALSE(LegacyNatLoaded(node));
  }
}

// A node that switched modes: DEL removes the container's rules from both.
// A runtime whose PATH finds a legacy iptables first, through a relative link to a link (as
// update-alternatives and merged-/usr builds chain them): the rules land in x_tables.
TEST_F(IptablesModeChoice, ALegacyIptablesFirstOnPathDecidesThroughLinks) {
  NG_REQUIRE_ROOT();
  char tmpl[] = "/tmp/ng-pmpath-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::filesystem::create_directory(dir + "/alternatives");
  for (const std::string tool : {"iptables", "ip6tables"}) {
    std::filesystem::create_symlink("/usr/sbin/" + tool + "-legacy", dir + "/alternatives/" + tool);
    std::filesystem::create_symlink("alternatives/" + tool, dir + "/" + tool);
  }
  TestNetns node("ng-pmlgpath");
  const auto out = AddWithPath(node, dir + ":/usr/sbin:/usr/bin");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(NftRules(node), 0);
  EXPECT_EQ(CountLines(node.MustRun("iptables-legacy-save -t nat"), "-A CNI-DN-"), 6);
}

TEST_F(IptablesModeChoice, DelRemovesTheContainersRulesInBothModes) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmboth");
  ASSERT_EQ(AddWithPath(node, "/usr/sbin:/usr/bin", R"(,"iptablesMode":"legacy")").exit_code, 0);
  ASSERT_EQ(AddWithPath(node, "/usr/sbin:/usr/bin").exit_code, 0);
  ASSERT_EQ(NftRules(node), 6);
  ASSERT_EQ(CountLines(node.MustRun("iptables-legacy-save -t nat"), "-A CNI-DN-"), 6);
  nodegate::testing::PluginCall del;
  del.binary = nodegate::testing::BinPath("portmap");
  del.command = "DEL";
  del.container_id = "ctr1";
  del.ifname = "eth0";
  del.stdin_data = Conf("", kMappings, "");
  del.run_in_netns = node.path();
  const auto out = nodegate::testing::RunPlugin(del);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(NftRules(node), 0);
  EXPECT_EQ(CountLines(node.MustRun("iptables-legacy-save -t nat") +
                           node.MustRun("ip6tables-legacy-save -t nat"),
                       "CNI-DN-"),
            0);
}

}  // namespace
}  // namespace nodegate::portmap::testing
