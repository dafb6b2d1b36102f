// portmap with the iptables (libiptc) backend, in private namespaces: real traffic, the
// differential against Debian's reference plugin (which is made to write the same legacy
// tables), switching between the two, concurrency with another iptables user, rollback, bad
// input, re-ADD, CHECK, GC and the UDP conntrack flush.
#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <thread>
#include <vector>

#include "tests/portmap/harness.h"

namespace nodegate::portmap::testing {
namespace {

std::string ContainerRules(const std::string& save) {
  std::string out;
  std::istringstream in(save);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("CNI-DN-") != std::string::npos) out += line + "\n";
  }
  return out;
}

TEST(PortmapIptables, RealTraffic) {
  NG_REQUIRE_ROOT();
  RunTrafficScenario("iptables");
}

// The same calls on two fresh nodes, one running the reference and one ours: identical
// iptables-legacy-save and ip6tables-legacy-save output.
TEST(PortmapIptables, SameTablesAsTheReference) {
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
TEST(PortmapIptables, SwitchesWithTheReference) {
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
// iptables-legacy: every party's rules are there afterwards, and nothing else.
TEST(PortmapIptables, ConcurrentWithAnotherIptablesUser) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmcc");
  node.MustRun("iptables-legacy -w -t nat -N OTHER-PARTY");
  // The other party: 120 rounds of append two, delete one; 120 rules remain.
  const std::string loop =
      "for i in $(seq 1 120); do "
      "iptables-legacy -w -t nat -A OTHER-PARTY -s 203.0.113.$((i % 250))/32 -j RETURN -m comment "
      "--comment keep$i && "
      "iptables-legacy -w -t nat -A OTHER-PARTY -d 203.0.113.$((i % 250))/32 -j RETURN -m comment "
      "--comment drop$i && "
      "iptables-legacy -w -t nat -D OTHER-PARTY -d 203.0.113.$((i % 250))/32 -j RETURN -m comment "
      "--comment drop$i || exit 1; "
      "done";
  std::atomic<int> other_rc{-1};
  std::thread other([&] { other_rc = node.Run(loop).exit_code; });

  constexpr int kContainers = 50;
  std::vector<std::string> confs(kContainers);
  std::vector<int> add_rc(kContainers, -1), del_rc(kContainers, -1);
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
        add_rc[i] = Portmap(node, "ADD", id, confs[i]).exit_code;
        // Every other container goes away again.
        if (i % 2 == 1) del_rc[i] = Portmap(node, "DEL", id, confs[i]).exit_code;
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
    EXPECT_EQ(add_rc[i], 0) << "ADD " << i;
    const std::string comment = "id: \\\"cc" + std::to_string(i) + "\\\"\"";
    if (i % 2 == 1) {
      EXPECT_EQ(del_rc[i], 0) << "DEL " << i;
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
TEST(PortmapIptables, FailureHalfWayLeavesNoRule) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmrb");
  node.MustRun("iptables-legacy -t nat -N EXT-MARK");
  const std::string conf = Conf("", kMappings, kPrev, R"(,"externalSetMarkChain":"EXT-MARK")");
  const auto add = Portmap(node, "ADD", "ctr1", conf);
  EXPECT_EQ(add.exit_code, 1) << add.out;
  EXPECT_NE(add.out.find("ip6tables"), std::string::npos) << add.out;
  for (bool v6 : {false, true}) {
    const std::string save = SaveNat(node, v6);
    EXPECT_EQ(CountLines(save, "CNI-DN-"), 0) << save;
  }
}

TEST(PortmapIptables, BadInputChangesNothing) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmbad");
  ASSERT_EQ(Portmap(node, "ADD", "keep", Conf("iptables", kMappings, kPrev)).exit_code, 0);
  const std::string before = SaveNat(node) + SaveNat(node, true);
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
  for (const auto& conf : bad) {
    const auto out = Portmap(node, "ADD", "bad", conf);
    EXPECT_EQ(out.exit_code, 1) << conf;
    EXPECT_NE(out.out.find("\"code\": 7"), std::string::npos) << conf << "\n" << out.out;
  }
  EXPECT_EQ(SaveNat(node) + SaveNat(node, true), before);
}

TEST(PortmapIptables, ReAddReplacesCheckFindsGapsAndGcRemovesStale) {
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
  node.MustRun("iptables-legacy -t nat -D CNI-DN-6ef8579d92ac413d65a3e 3");
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
  save = SaveNat(node) + SaveNat(node, true);
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr1\")"), 0) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr3\")"), 0) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"rnet\" id: \"ctr2\")"), 4) << save;
  EXPECT_EQ(CountLines(save, R"(name: \"othernet\" id: \"ctr3\")"), 4) << save;
  EXPECT_EQ(Portmap(node, "STATUS", "", gc).exit_code, 0);
}

TEST(PortmapIptables, DelWithoutNetnsOrPrevResult) {
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
  EXPECT_EQ(CountLines(SaveNat(node) + SaveNat(node, true), "CNI-DN-"), 0);
}

// A runtime stops tearing down a chain at the first failing DEL, so a DEL whose config cannot
// be read (containerd's Go-cased keys read by an older build, a corrupt cached prevResult)
// still removes what the container owns, found by network name and container ID, and nothing
// else. The reference fails these DELs.
TEST(PortmapIptables, DelWithAnUnreadableConfigRemovesTheContainersRules) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmbad");
  ASSERT_EQ(Portmap(node, "ADD", "other",
                    Conf("iptables", R"([{"hostPort":9999,"containerPort":99,"protocol":"tcp"}])",
                         PrevResult("10.88.0.9/16", "")))
                .exit_code,
            0);
  const int others = CountLines(SaveNat(node) + SaveNat(node, true), "CNI-DN-");
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
    const std::string save = SaveNat(node) + SaveNat(node, true);
    EXPECT_EQ(CountLines(save, R"(id: \"ctr1\")"), 0) << save;
    EXPECT_EQ(CountLines(save, "CNI-DN-"), others) << save;
  }
}

// A UDP conntrack entry towards the host port, made before the mapping existed, would keep
// the client away from the container; ADD flushes it.
TEST(PortmapIptables, AddFlushesStaleUdpConntrack) {
  NG_REQUIRE_ROOT();
  Topology topo;
  EchoServer server(topo.container.path(), 53, "dns");
  const std::string client = topo.client.path();
  // Conntrack is active on a real node (kube-proxy, firewalls); make it so in this one.
  topo.node.MustRun("iptables-legacy -A INPUT -m conntrack --ctstate INVALID -j DROP");
  // No mapping yet: the datagram goes to the node itself and leaves a conntrack entry.
  EXPECT_FALSE(UdpRequest(client, topo.node_client_ip4, 5353, 300, 40000));
  EXPECT_EQ(topo.node.Run("conntrack -L -p udp --dport 5353 2>/dev/null | grep -c 5353").output,
            "1\n");
  // Entries of another UDP port and of TCP to the same port are not the plugin's business.
  topo.node.MustRun(
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p udp --sport 999 --dport 5354 -t 600 && "
      "conntrack -I -s 198.51.100.9 -d 198.51.100.1 -p tcp --sport 999 --dport 5353 "
      "--state ESTABLISHED -t 600");
  const std::string conf =
      Conf("iptables", R"([{"hostPort":5353,"containerPort":53,"protocol":"udp"}])",
           PrevResult(topo.container_ip4 + "/24", ""));
  ASSERT_EQ(Portmap(topo.node, "ADD", "ctr1", conf).exit_code, 0);
  EXPECT_EQ(UdpRequest(client, topo.node_client_ip4, 5353, 1500, 40000), "dns");
  ASSERT_EQ(Portmap(topo.node, "DEL", "ctr1", conf).exit_code, 0);
  EXPECT_EQ(topo.node.Run("conntrack -L -p udp --dport 5353 2>/dev/null | grep -c 5353").output,
            "0\n");
  EXPECT_EQ(topo.node.Run("conntrack -L -p udp --dport 5354 2>/dev/null | grep -c 5354").output,
            "1\n");
  EXPECT_EQ(topo.node.Run("conntrack -L -p tcp --dport 5353 2>/dev/null | grep -c 5353").output,
            "1\n");
}

}  // namespace
}  // namespace nodegate::portmap::testing
