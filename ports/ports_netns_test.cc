// `nodegate ports` for real, each verdict built in throwaway namespaces: static manifests that
// declare ports, python3 listeners, and mappings installed by our portmap and Debian's
// reference portmap. Every command runs inside the test's own namespaces.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/background_process.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::ports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nodegate::testing::BackgroundProcess;
using nodegate::testing::NodeWithContainer;
using nodegate::testing::TestNetns;
using nodegate::testing::WaitForListener;

class PortsNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() /
           ("ports-netns-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    fs::create_directories(tmp_ / "manifests");
    fs::create_directories(tmp_ / "cache");
  }
  void TearDown() override {
    listeners_.clear();
    fs::remove_all(tmp_);
  }

  void WriteManifest(const std::string& name, const std::string& text) {
    std::ofstream(tmp_ / "manifests" / name) << text;
  }

  // Ports: `nodegate ports -o json --port PORT` inside `ns`, parsed. The listing of every port
  // is read too, and its rows of PORT must be the same: --port reads less (keyed reads, the
  // sockets of that port only, the cache files of its mappings only), never something else.
  json Ports(const TestNetns& ns, int port, const std::string& extra = "") {
    const json one = RunPorts(ns, "--port " + std::to_string(port) + " " + extra);
    const json every = RunPorts(ns, extra);
    json rows_of_port = json::array();
    if (every.contains("ports")) {
      for (const json& row : every["ports"]) {
        if (row["port"] == port) rows_of_port.push_back(row);
      }
    }
    EXPECT_EQ(one.value("ports", json()), rows_of_port) << "--port " << port;
    return one;
  }

  json RunPorts(const TestNetns& ns, const std::string& args) {
    const std::string bin = nodegate::testing::BinPath("nodegate");
    const auto r =
        ns.Run(bin + " ports -o json " + args + " --manifests " + (tmp_ / "manifests").string() +
               " --cni-cache " + (tmp_ / "cache").string() + " 2>" + (tmp_ / "stderr").string());
    EXPECT_EQ(r.exit_code, 0) << r.output << std::ifstream(tmp_ / "stderr").rdbuf();
    return json::parse(r.output, nullptr, false);
  }

  // Listen: a python3 process in `ns` holding `proto` port `port` on `ip`, waited for by its
  // socket; returns its pid.
  int Listen(const TestNetns& ns, const std::string& proto, const std::string& ip, int port) {
    const std::string family = ip.find(':') != std::string::npos ? "AF_INET6" : "AF_INET";
    const std::string type = proto == "udp" ? "SOCK_DGRAM" : "SOCK_STREAM";
    const std::string script = "import socket,time\ns=socket.socket(socket.AF_" + family.substr(3) +
                               ",socket." + type + ")\ns.bind(('" + ip + "'," +
                               std::to_string(port) + "))\n" +
                               (proto == "udp" ? "" : "s.listen()\n") + "time.sleep(600)\n";
    const auto& listener = listeners_.emplace_back(
        std::make_unique<BackgroundProcess>(ns, std::vector<std::string>{"python3", "-c", script}));
    EXPECT_TRUE(WaitForListener(ns, proto == "udp" ? "UDP" : "TCP", port, listener.get()));
    return listener->pid();
  }

  void WriteCacheEntry(const std::string& container_id, const std::string& ns,
                       const std::string& name) {
    std::ofstream(tmp_ / "cache" / ("ports-net-" + container_id + "-eth0"))
        << R"({"kind":"cniCacheV1","containerId":")" << container_id
        << R"(","config":"e30=","ifName":"eth0","networkName":"ports-net","cniArgs":[)"
        << R"(["K8S_POD_NAMESPACE",")" << ns << R"("],["K8S_POD_NAME",")" << name << R"("]]})";
  }

  fs::path tmp_;
  std::vector<std::unique_ptr<BackgroundProcess>> listeners_;
};

// OneRow: the only row of a --port query.
const json& OneRow(const json& out) {
  static const json kNone;
  if (!out.is_object() || !out.contains("ports") || out["ports"].size() != 1) {
    ADD_FAILURE() << "expected one row: " << out.dump();
    return kNone;
  }
  return out["ports"][0];
}

constexpr char kDnsManifest[] = R"(apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: kube-system}
spec:
  hostNetwork: true
  containers:
  - name: coredns
    image: coredns
    ports: [{containerPort: 18053, protocol: UDP}]
)";

TEST_F(PortsNetnsTest, DeclaredButNothingListens) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-ports");
  WriteManifest("dns.yaml", kDnsManifest);
  const json row = OneRow(Ports(node, 18053));
  EXPECT_EQ(row["hostIP"], "0.0.0.0");
  EXPECT_EQ(row["protocol"], "UDP");
  EXPECT_EQ(row["port"], 18053);
  EXPECT_EQ(row["verdict"], "declared-not-listening");
  ASSERT_EQ(row["declared"].size(), 1u);
  EXPECT_TRUE(row["declared"][0]["pod"].get<std::string>().starts_with("kube-system/dns-"));
  EXPECT_EQ(row["declared"][0]["container"], "coredns");
  EXPECT_EQ(row["declared"][0]["source"], (tmp_ / "manifests" / "dns.yaml").string());
  EXPECT_EQ(row["mapped"], json::array());
  EXPECT_EQ(row["listening"], json::array());
}

TEST_F(PortsNetnsTest, DeclaredAndListeningIsOk) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-ports");
  WriteManifest("dns.yaml", kDnsManifest);
  const int pid = Listen(node, "udp", "0.0.0.0", 18053);
  const json row = OneRow(Ports(node, 18053));
  EXPECT_EQ(row["verdict"], "ok");
  ASSERT_EQ(row["listening"].size(), 1u);
  EXPECT_EQ(row["listening"][0]["pid"], pid);
}

TEST_F(PortsNetnsTest, ListenerOnAnUndeclaredPort) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-ports");
  const int pid = Listen(node, "tcp", "0.0.0.0", 18080);
  const json row = OneRow(Ports(node, 18080));
  EXPECT_EQ(row["hostIP"], "0.0.0.0");
  EXPECT_EQ(row["protocol"], "TCP");
  EXPECT_EQ(row["verdict"], "listening-not-declared");
  ASSERT_EQ(row["listening"].size(), 1u);
  EXPECT_EQ(row["listening"][0]["pid"], pid);
  EXPECT_EQ(row["listening"][0]["command"], "python3");
  EXPECT_EQ(row["listening"][0]["container"], nullptr);
  EXPECT_EQ(row["declared"], json::array());
}

TEST_F(PortsNetnsTest, V6ListenerAndTextTable) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-ports");
  Listen(node, "tcp", "::", 18081);
  const json row = OneRow(Ports(node, 18081));
  EXPECT_EQ(row["hostIP"], "::");
  EXPECT_EQ(row["verdict"], "listening-not-declared");
  const auto text = node.Run(nodegate::testing::BinPath("nodegate") + " ports --port 18081");
  EXPECT_NE(text.output.find("listening-not-declared"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("python3 ("), std::string::npos) << text.output;
}

// 600 containers mapped in the reference's layout (past 512 chains a second thread reads half of
// them): every mapping is one row, with its own target and the pod the cache names.
TEST_F(PortsNetnsTest, ManyMappingsEachWithItsPod) {
  NG_REQUIRE_ROOT();
  constexpr int kContainers = 600;
  TestNetns node("ng-portsmany");
  for (int i = 0; i < kContainers; ++i) {
    WriteCacheEntry("c" + std::to_string(i), "many", "pod-" + std::to_string(i));
  }
  std::ofstream(tmp_ / "rules") << nodegate::testing::ReferenceLayoutRules(kContainers, "ports-net",
                                                                           21000, "10.89", 2000000);
  node.MustRun("iptables-nft-restore < " + (tmp_ / "rules").string());
  const json every = RunPorts(node, "");
  ASSERT_TRUE(every.contains("ports")) << every.dump();
  int mapped = 0;
  for (const json& row : every["ports"]) {
    ASSERT_EQ(row["mapped"].size(), 1u) << row.dump();
    const int i = row["port"].get<int>() - 21000;
    EXPECT_EQ(row["verdict"], "mapped-not-declared");
    EXPECT_EQ(row["mapped"][0]["pod"], "many/pod-" + std::to_string(i));
    EXPECT_EQ(row["mapped"][0]["target"],
              "10.89." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 2) + ":80");
    ++mapped;
  }
  EXPECT_EQ(mapped, kContainers);
  EXPECT_EQ(OneRow(Ports(node, 21599))["mapped"][0]["pod"], "many/pod-599");
}

// Mapped rows: a container namespace behind a veth, and portmap ADD run in the node namespace.
class PortsMappedTest : public PortsNetnsTest {
 protected:
  nodegate::testing::PluginOutput Map(const NodeWithContainer& topo, bool reference,
                                      const std::string& container_id, int host_port) {
    nodegate::testing::PluginCall call;
    call.binary = reference ? nodegate::testing::ReferencePath("portmap")
                            : nodegate::testing::BinPath("portmap");
    call.command = "ADD";
    call.container_id = container_id;
    call.netns = topo.container.path();
    call.ifname = "eth0";
    call.run_in_netns = topo.node.path();
    call.stdin_data =
        R"({"cniVersion":"1.0.0","name":"ports-net","type":"portmap","runtimeConfig":)"
        R"({"portMappings":[{"hostPort":)" +
        std::to_string(host_port) +
        R"(,"containerPort":80,"protocol":"tcp"}]},"prevResult":{"cniVersion":"1.0.0",)"
        R"("interfaces":[{"name":"eth0","sandbox":")" +
        topo.container.path() + R"("}],"ips":[{"interface":0,"address":")" + topo.container_ip4 +
        R"(/24"}]}})";
    return nodegate::testing::RunPlugin(call);
  }

  bool HaveReference() {
    return ::access(nodegate::testing::ReferencePath("portmap").c_str(), X_OK) == 0;
  }
};

TEST_F(PortsMappedTest, MappingsWithoutADeclaringPod) {
  NG_REQUIRE_ROOT();
  if (!HaveReference()) {
    GTEST_SKIP() << "no reference portmap at " << nodegate::testing::ReferencePath("portmap");
  }
  NodeWithContainer topo;
  WriteCacheEntry("ctr-ours", "default", "web");
  auto ours = Map(topo, /*reference=*/false, "ctr-ours", 18090);
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  auto reference = Map(topo, /*reference=*/true, "ctr-ref", 18091);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;

  const json mine = OneRow(Ports(topo.node, 18090));
  EXPECT_EQ(mine["hostIP"], "0.0.0.0");
  EXPECT_EQ(mine["protocol"], "TCP");
  EXPECT_EQ(mine["verdict"], "mapped-not-declared");
  ASSERT_EQ(mine["mapped"].size(), 1u);
  EXPECT_EQ(mine["mapped"][0]["containerID"], "ctr-ours");
  EXPECT_EQ(mine["mapped"][0]["network"], "ports-net");
  EXPECT_EQ(mine["mapped"][0]["pod"], "default/web");
  EXPECT_EQ(mine["mapped"][0]["target"], topo.container_ip4 + ":80");

  const json theirs = OneRow(Ports(topo.node, 18091));
  EXPECT_EQ(theirs["verdict"], "mapped-not-declared");
  ASSERT_EQ(theirs["mapped"].size(), 1u);
  EXPECT_EQ(theirs["mapped"][0]["containerID"], "ctr-ref");
  EXPECT_EQ(theirs["mapped"][0]["pod"], nullptr);
  EXPECT_EQ(theirs["mapped"][0]["layout"], mine["mapped"][0]["layout"]);  // same node mode
}

TEST_F(PortsMappedTest, DeclaredAndMappedForTheSamePodIsOk) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  WriteCacheEntry("ctr-web", "default", "web");
  std::ofstream(tmp_ / "pods.json")
      << R"({"kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{)"
         R"("containers":[{"name":"web","ports":[{"containerPort":80,"hostPort":18092}]}]}})";
  auto ours = Map(topo, /*reference=*/false, "ctr-web", 18092);
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  const json row = OneRow(Ports(topo.node, 18092, "--pods " + (tmp_ / "pods.json").string()));
  EXPECT_EQ(row["verdict"], "ok");
  EXPECT_EQ(row["declared"][0]["pod"], "default/web");
  EXPECT_EQ(row["mapped"][0]["pod"], "default/web");
}

TEST_F(PortsMappedTest, OnePortMappedTwice) {
  NG_REQUIRE_ROOT();
  if (!HaveReference()) {
    GTEST_SKIP() << "no reference portmap";
  }
  NodeWithContainer topo;
  auto first = Map(topo, /*reference=*/true, "ctr-first", 18095);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = Map(topo, /*reference=*/false, "ctr-second", 18095);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json row = OneRow(Ports(topo.node, 18095));
  EXPECT_EQ(row["verdict"], "mapped-twice");
  ASSERT_EQ(row["mapped"].size(), 2u);
  std::set<std::string> ids = {row["mapped"][0]["containerID"], row["mapped"][1]["containerID"]};
  EXPECT_EQ(ids, (std::set<std::string>{"ctr-first", "ctr-second"}));
}

}  // namespace
}  // namespace nodegate::ports
