// Host-port truth (issue 12), portmap's side, in private namespaces: ListInstalledMappings
// reads back exactly what each layout holds (ours in iptables nft and legacy mode and in
// nftables, Debian's reference in the node's mode, the reference nftables backend's tables),
// and "hostPortConflicts": "reject" refuses an overlapping host port in every backend, leaves
// nothing behind, and lets exactly one of 20 simultaneous ADDs of one port through.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "lib/sys/netns.h"
#include "plugins/portmap/conflicts.h"
#include "plugins/portmap/installed_mappings.h"
#include "tests/portmap/harness.h"

namespace nodegate::portmap::testing {
namespace {

// One line per mapping, sorted: easy to compare and to read in a failure.
std::vector<std::string> Lines(const std::vector<InstalledMapping>& mappings) {
  std::vector<std::string> out;
  for (const auto& m : mappings) {
    out.push_back(m.layout + " " + (m.family == net::Family::kV4 ? "4 " : "6 ") +
                  std::string(ProtocolName(m.protocol)) + " " +
                  (m.host_ip ? m.host_ip->ToString() : "*") + ":" + std::to_string(m.host_port) +
                  " -> " + m.target + " " + m.network + "/" + m.container_id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Installed(const TestNetns& node) {
  auto scope = sys::NetnsScope::Enter(node.path());
  EXPECT_TRUE(scope.ok());
  auto mappings = ListInstalledMappings();
  EXPECT_TRUE(mappings.ok()) << mappings.error().msg;
  return mappings.ok() ? Lines(*mappings) : std::vector<std::string>{};
}

// The keyed listing (what a refusal reads: in our table, map elements by key over netlink
// instead of the whole table through libnftables) must find what the whole listing finds.
std::vector<std::string> InstalledWithKeys(const TestNetns& node) {
  auto scope = sys::NetnsScope::Enter(node.path());
  EXPECT_TRUE(scope.ok());
  const std::set<PortKey> keys = {{net::Family::kV4, Protocol::kTcp, 8080},
                                  {net::Family::kV4, Protocol::kUdp, 5353},
                                  {net::Family::kV6, Protocol::kUdp, 5353},
                                  {net::Family::kV6, Protocol::kTcp, 8080}};
  auto mappings = ListInstalledMappings(keys);
  EXPECT_TRUE(mappings.ok()) << mappings.error().msg;
  return mappings.ok() ? Lines(*mappings) : std::vector<std::string>{};
}

// What kMappings/kPrev (ctr1 in rnet) installs, in `layout`.
std::vector<std::string> Ctr1Lines(const std::string& layout, const std::string& id = "ctr1",
                                   const std::string& network = "rnet") {
  const std::string owner = " " + network + "/" + id;
  std::vector<std::string> out = {
      layout + " 4 tcp 10.88.0.1:8080 -> 10.88.0.2:80" + owner,
      layout + " 4 udp *:5353 -> 10.88.0.2:53" + owner,
      layout + " 6 udp *:5353 -> [fd00:88::2]:53" + owner,
  };
  std::sort(out.begin(), out.end());
  return out;
}

TEST(InstalledMappings, IptablesNftModeOursAndTheReference) {
  NG_REQUIRE_ROOT();
  UseIptablesMode(IptablesMode::kNft);
  TestNetns ours("ng-lsour");
  ASSERT_EQ(Portmap(ours, "ADD", "ctr1", Conf("", kMappings, kPrev)).exit_code, 0);
  EXPECT_EQ(Installed(ours), Ctr1Lines("iptables-nft"));
  EXPECT_EQ(InstalledWithKeys(ours), Ctr1Lines("iptables-nft"));
  TestNetns ref("ng-lsref");
  const auto out = Portmap(ref, "ADD", "ctr9", Conf("", kMappings, kPrev), /*reference=*/true);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(Installed(ref), Ctr1Lines("iptables-nft", "ctr9"));
  EXPECT_EQ(InstalledWithKeys(ref), Ctr1Lines("iptables-nft", "ctr9"));
}

// Past 512 container chains a second thread with its own socket reads half of them: every
// mapping must still be found once, with its own owner (600 containers, as the reference's
// layout holds them, loaded by iptables-nft-restore).
TEST(InstalledMappings, ManyContainersReadByTwoReaders) {
  NG_REQUIRE_ROOT();
  constexpr int kContainers = 600;
  TestNetns node("ng-lsmany");
  std::vector<std::string> expected;
  for (int i = 0; i < kContainers; ++i) {
    const std::string ip = "10.88." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 2);
    expected.push_back("iptables-nft 4 tcp *:" + std::to_string(20000 + i) + " -> " + ip +
                       ":80 many/c" + std::to_string(i));
  }
  const std::string rules =
      nodegate::testing::ReferenceLayoutRules(kContainers, "many", 20000, "10.88", 1000000);
  const std::string file = "/tmp/ng-lsmany.rules";
  std::ofstream(file) << rules;
  node.MustRun("iptables-nft-restore < " + file);
  std::filesystem::remove(file);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Installed(node), expected);
}

TEST(InstalledMappings, IptablesLegacyMode) {
  NG_REQUIRE_ROOT();
  UseIptablesMode(IptablesMode::kLegacy);
  TestNetns ours("ng-lslg");
  const auto out =
      Portmap(ours, "ADD", "ctr1", Conf("", kMappings, kPrev, R"(,"iptablesMode":"legacy")"));
  TestNetns ref("ng-lslgref");
  const auto ref_out = Portmap(ref, "ADD", "ctr9", Conf("", kMappings, kPrev), true);
  UseIptablesMode(IptablesMode::kNft);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(Installed(ours), Ctr1Lines("iptables-legacy"));
  EXPECT_EQ(InstalledWithKeys(ours), Ctr1Lines("iptables-legacy"));
  ASSERT_EQ(ref_out.exit_code, 0) << ref_out.out << ref_out.err;
  EXPECT_EQ(Installed(ref), Ctr1Lines("iptables-legacy", "ctr9"));
}

TEST(InstalledMappings, OurNftablesBackend) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-lsnft");
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", Conf("nftables", kMappings, kPrev)).exit_code, 0);
  EXPECT_EQ(Installed(node), Ctr1Lines("nftables"));
  EXPECT_EQ(InstalledWithKeys(node), Ctr1Lines("nftables"));
  // A key nobody maps finds nothing.
  auto scope = sys::NetnsScope::Enter(node.path());
  ASSERT_TRUE(scope.ok());
  const auto none = ListInstalledMappings({{net::Family::kV4, Protocol::kTcp, 8081}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// The reference nftables backend (v1.9) is not in Debian 12: its canonical ruleset
// (as the reference's v1.9 source writes it) is loaded here.
TEST(InstalledMappings, ReferenceNftablesTables) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-lsrnft");
  const auto rules =
      std::filesystem::temp_directory_path() / ("ng-refnft-" + std::to_string(::getpid()) + ".nft");
  std::ofstream(rules)
      << "table ip cni_hostport {\n"
         " chain hostports {\n"
         "  ip daddr 10.88.0.1 tcp dport 8080 dnat to 10.88.0.2:80 comment \"ctr1\"\n"
         "  udp dport 5353 dnat to 10.88.0.2:53 comment \"ctr1\"\n"
         " }\n"
         " chain hostip_hostports {\n }\n"
         "}\n"
         "table ip6 cni_hostport {\n"
         " chain hostports {\n  udp dport 5353 dnat to [fd00:88::2]:53 comment \"ctr1\"\n }\n"
         "}\n";
  node.MustRun("nft -f " + rules.string());
  std::filesystem::remove(rules);
  EXPECT_EQ(Installed(node), Ctr1Lines("nftables-reference", "ctr1", ""));
}

// The refusal, parameterised by where our rules go.
struct Where {
  std::string name;
  std::string backend;  // Conf()'s backend
  std::string extra;    // more config keys
  IptablesMode mode;
};
void PrintTo(const Where& where, std::ostream* os) { *os << where.name; }

class Refusal : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    UseIptablesMode(GetParam().mode);
    cache_ = std::filesystem::temp_directory_path() /
             ("ng-cnicache-" + std::to_string(::getpid()) + "-" + GetParam().name);
    std::filesystem::create_directories(cache_);
    env_ = {{"NODEGATE_CNI_CACHE_DIR", cache_.string()},
            {"NODEGATE_PORTMAP_LOCK", (cache_ / "portmap.lock").string()}};
  }
  void TearDown() override {
    UseIptablesMode(IptablesMode::kNft);
    std::filesystem::remove_all(cache_);
  }

  PluginOutput Add(const std::string& id, const std::string& mappings, bool reject = true,
                   const std::string& network = "rnet", const std::string& prev = kPrev) {
    const std::string extra = GetParam().extra + (reject ? R"(,"hostPortConflicts":"reject")" : "");
    return Portmap(node_, "ADD", id, Conf(GetParam().backend, mappings, prev, extra, network),
                   false, env_);
  }
  std::string Everything() { return SaveNat(node_) + SaveNat(node_, true) + NftRuleset(node_); }

  TestNetns node_{"ng-rej"};
  std::filesystem::path cache_;
  std::map<std::string, std::string> env_;
};

std::string Tcp(int port, const std::string& host_ip = "") {
  return R"([{"hostPort":)" + std::to_string(port) + R"(,"containerPort":80,"protocol":"tcp")" +
         (host_ip.empty() ? "" : R"(,"hostIP":")" + host_ip + "\"") + "}]";
}

void ExpectRefused(const PluginOutput& out, const std::string& other) {
  EXPECT_NE(out.exit_code, 0) << out.out;
  const auto error = nlohmann::json::parse(out.out, nullptr, false);
  ASSERT_TRUE(error.is_object()) << out.out << out.err;
  EXPECT_EQ(error.value("code", 0), kErrHostPortTaken) << out.out;
  EXPECT_NE(error.value("msg", "").find(other), std::string::npos) << out.out;
}

TEST_P(Refusal, OverlapsAreRefusedAndNothingIsLeft) {
  NG_REQUIRE_ROOT();
  std::ofstream(cache_ / "rnet-ctr1-eth0")
      << R"({"kind":"cniCacheV1","containerId":"ctr1","networkName":"rnet","ifName":"eth0",)"
      << R"("cniArgs":[["K8S_POD_NAMESPACE","default"],["K8S_POD_NAME","web"]]})";
  ASSERT_EQ(Add("ctr1", Tcp(8080)).exit_code, 0);
  const std::string before = Everything();
  const auto refused = Add("ctr2", Tcp(8080));
  ExpectRefused(refused, "container \"ctr1\" of network \"rnet\" (pod default/web)");
  EXPECT_EQ(Everything(), before) << "a refused ADD left something";
  ExpectRefused(Add("ctr2", Tcp(8080, "10.88.0.1")), "ctr1");  // every address vs one
  // Same port, other protocol: fine. A re-ADD of the owner: fine.
  EXPECT_EQ(Add("ctr3", R"([{"hostPort":8080,"containerPort":80,"protocol":"udp"}])").exit_code, 0);
  EXPECT_EQ(Add("ctr1", Tcp(8080)).exit_code, 0);
  // A specific address vs every address, and two different addresses.
  ASSERT_EQ(Add("ctr4", Tcp(9090, "10.88.0.1")).exit_code, 0);
  // ctr4's only cache entry is a FIFO: skipped (no pod named), not waited on for a writer.
  ASSERT_EQ(::mkfifo((cache_ / "rnet-ctr4-eth0").c_str(), 0600), 0);
  const auto refused_fifo = Add("ctr5", Tcp(9090));
  ExpectRefused(refused_fifo, "container \"ctr4\" of network \"rnet\" (");
  EXPECT_EQ(refused_fifo.out.find("(pod "), std::string::npos) << refused_fifo.out;
  EXPECT_EQ(Add("ctr5", Tcp(9090, "192.0.2.1")).exit_code, 0);
  // Without the key, the reference's behaviour (another network: our nftables backend
  // refuses a port taken in the same network whatever the key says).
  EXPECT_EQ(Add("ctr6", Tcp(8080), /*reject=*/false, "other").exit_code, 0);
}

// A port is taken per family: an IPv4-only container is not refused for a port an IPv6-only
// one maps (its refusal reads no ip6 table at all), an IPv6-only one is.
TEST_P(Refusal, EachFamilyByItself) {
  NG_REQUIRE_ROOT();
  const std::string v4_only = PrevResult("10.88.0.3/16", "");
  const std::string v6_only = PrevResult("", "fd00:88::3/64");
  ASSERT_EQ(Add("ctr6", Tcp(6060), true, "rnet", v6_only).exit_code, 0);
  EXPECT_EQ(Add("ctr4", Tcp(6060), true, "rnet", v4_only).exit_code, 0);
  const std::string before = Everything();
  ExpectRefused(Add("ctr7", Tcp(6060), true, "rnet", v6_only), "container \"ctr6\"");
  ExpectRefused(Add("ctr8", Tcp(6060), true, "rnet", v4_only), "container \"ctr4\"");
  EXPECT_EQ(Everything(), before);
}

TEST_P(Refusal, AMappingTheReferenceMade) {
  NG_REQUIRE_ROOT();
  const auto ref = Portmap(node_, "ADD", "refctr", Conf("", Tcp(7070), kPrev), true);
  ASSERT_EQ(ref.exit_code, 0) << ref.out << ref.err;
  const std::string before = Everything();
  ExpectRefused(Add("ctr1", Tcp(7070)), "container \"refctr\" of network \"rnet\"");
  EXPECT_EQ(Everything(), before);
}

TEST_P(Refusal, TwentyParallelAddsOfOnePortOneWins) {
  NG_REQUIRE_ROOT();
  std::vector<PluginOutput> outs(20);
  std::vector<std::thread> threads;
  for (int i = 0; i < 20; ++i) {
    threads.emplace_back([&, i] { outs[i] = Add("par" + std::to_string(i), Tcp(6060)); });
  }
  for (auto& t : threads) t.join();
  int won = 0;
  for (const auto& out : outs) {
    if (out.exit_code == 0) {
      ++won;
    } else {
      EXPECT_NE(out.out.find("\"code\": 120"), std::string::npos) << out.out << out.err;
    }
  }
  EXPECT_EQ(won, 1);
  int v4_mappings = 0;
  for (const auto& line : Installed(node_)) v4_mappings += line.find(" 4 tcp *:6060 ") != line.npos;
  EXPECT_EQ(v4_mappings, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Backends, Refusal,
    ::testing::Values(Where{"nft", "iptables", "", IptablesMode::kNft},
                      Where{"legacy", "", R"(,"iptablesMode":"legacy")", IptablesMode::kLegacy},
                      Where{"nftables", "nftables", "", IptablesMode::kNft}),
    [](const ::testing::TestParamInfo<Where>& info) { return info.param.name; });

}  // namespace
}  // namespace nodegate::portmap::testing
