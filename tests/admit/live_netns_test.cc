// `nodegate admit --live` / `guard --live` and `--strict`, with each warning kind built for
// real in a throwaway namespace: a python3 listener (port-listening) and a mapping installed by
// our portmap for another pod (port-mapped).

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

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nodegate::testing::BackgroundProcess;
using nodegate::testing::NodeWithContainer;
using nodegate::testing::TestNetns;
using nodegate::testing::WaitForListener;

struct CliRun {
  int exit_code = -1;
  json out;
};

class AdmitLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() /
           ("admit-live-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    fs::create_directories(tmp_ / "cache");
    fs::create_directories(tmp_ / "manifests");
    std::ofstream(tmp_ / "node.yaml")
        << "apiVersion: v1\nkind: Node\nmetadata: {name: worker-1}\n"
           "status: {capacity: {cpu: \"2\", memory: 4Gi, pods: \"110\"}}\n";
    // The candidate: default/web asking for host port 18180/TCP.
    std::ofstream(tmp_ / "web.yaml") << "apiVersion: v1\nkind: Pod\n"
                                        "metadata: {name: web, namespace: default}\n"
                                        "spec:\n  containers:\n  - name: web\n    image: web\n"
                                        "    ports: [{containerPort: 80, hostPort: 18180}]\n";
  }
  void TearDown() override {
    listener_.reset();
    fs::remove_all(tmp_);
  }

  // Nodegate: `nodegate ARGS -o json` inside `ns` (stderr kept apart), parsed.
  CliRun Nodegate(const TestNetns& ns, const std::string& args) {
    const std::string node = (tmp_ / "node.yaml").string();
    const auto r = ns.Run(nodegate::testing::BinPath("nodegate") + " " + args + " --node " + node +
                          " --cni-cache " + (tmp_ / "cache").string() + " -o json " +
                          (tmp_ / "web.yaml").string() + " 2>" + (tmp_ / "err").string());
    return {r.exit_code, json::parse(r.output, nullptr, false)};
  }

  // A python3 process in `ns` listening on 18180, waited for by its socket.
  void ListenOn18180(const TestNetns& ns) {
    listener_ = std::make_unique<BackgroundProcess>(
        ns, std::vector<std::string>{
                "python3", "-c",
                "import socket,time\ns=socket.socket()\ns.bind(('0.0.0.0',18180))\n"
                "s.listen()\ntime.sleep(600)\n"});
    ASSERT_TRUE(WaitForListener(ns, "TCP", 18180, listener_.get()));
  }

  fs::path tmp_;
  std::unique_ptr<BackgroundProcess> listener_;
};

const json& OnlyPod(const CliRun& run) {
  static const json kNone;
  if (!run.out.is_object() || run.out["pods"].size() != 1) {
    ADD_FAILURE() << "unexpected output: " << run.out.dump();
    return kNone;
  }
  return run.out["pods"][0];
}

TEST_F(AdmitLiveTest, ListeningProcessWarnsAndStrictRejects) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-live");
  ASSERT_NO_FATAL_FAILURE(ListenOn18180(node));

  const CliRun plain = Nodegate(node, "admit");
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_FALSE(OnlyPod(plain).contains("warnings"));  // the contract without --live

  const CliRun live = Nodegate(node, "admit --live");
  EXPECT_EQ(live.exit_code, 0);
  EXPECT_EQ(live.out["admitted"], true);
  const json& pod = OnlyPod(live);
  ASSERT_EQ(pod["warnings"].size(), 1u) << pod.dump();
  const json& w = pod["warnings"][0];
  EXPECT_EQ(w["kind"], "port-listening");
  EXPECT_EQ(w["hostIP"], "0.0.0.0");
  EXPECT_EQ(w["protocol"], "TCP");
  EXPECT_EQ(w["port"], 18180);
  EXPECT_NE(w["detail"].get<std::string>().find("python3 (pid " + std::to_string(listener_->pid())),
            std::string::npos)
      << w.dump();

  const CliRun strict = Nodegate(node, "admit --live --strict");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_EQ(strict.out["admitted"], false);
  EXPECT_EQ(OnlyPod(strict)["admitted"], false);
  EXPECT_EQ(OnlyPod(strict)["failures"][0]["plugin"], "LivePorts");
}

TEST_F(AdmitLiveTest, StrictNeedsLive) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-live");
  EXPECT_EQ(Nodegate(node, "admit --strict").exit_code, 2);
}

TEST_F(AdmitLiveTest, MappingOfAnotherPodWarnsAndStrictGuardDoesNotInstall) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  std::ofstream(tmp_ / "cache" / "live-net-ctr-other-eth0")
      << R"({"kind":"cniCacheV1","containerId":"ctr-other","config":"e30=","ifName":"eth0",)"
         R"("networkName":"live-net","cniArgs":[["K8S_POD_NAMESPACE","default"],)"
         R"(["K8S_POD_NAME","other"]]})";
  nodegate::testing::PluginCall call;
  call.binary = nodegate::testing::BinPath("portmap");
  call.command = "ADD";
  call.container_id = "ctr-other";
  call.netns = topo.container.path();
  call.ifname = "eth0";
  call.run_in_netns = topo.node.path();
  call.stdin_data =
      R"({"cniVersion":"1.0.0","name":"live-net","type":"portmap","runtimeConfig":)"
      R"({"portMappings":[{"hostPort":18180,"containerPort":80,"protocol":"tcp"}]},)"
      R"("prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":")" +
      topo.container.path() + R"("}],"ips":[{"interface":0,"address":")" + topo.container_ip4 +
      R"(/24"}]}})";
  const auto added = nodegate::testing::RunPlugin(call);
  ASSERT_EQ(added.exit_code, 0) << added.err;

  const CliRun live = Nodegate(topo.node, "admit --live");
  EXPECT_EQ(live.exit_code, 0);
  const json& pod = OnlyPod(live);
  ASSERT_EQ(pod["warnings"].size(), 1u) << pod.dump();
  EXPECT_EQ(pod["warnings"][0]["kind"], "port-mapped");
  EXPECT_NE(pod["warnings"][0]["detail"].get<std::string>().find("pod default/other"),
            std::string::npos)
      << pod.dump();

  const std::string manifests = (tmp_ / "manifests").string();
  const CliRun guard = Nodegate(topo.node, "guard --live --strict --manifests " + manifests);
  EXPECT_EQ(guard.exit_code, 1);
  EXPECT_EQ(guard.out["installed"], false);
  EXPECT_FALSE(fs::exists(tmp_ / "manifests" / "web.yaml"));

  const CliRun guard_warn = Nodegate(topo.node, "guard --live --manifests " + manifests);
  EXPECT_EQ(guard_warn.exit_code, 0);
  EXPECT_EQ(OnlyPod(guard_warn)["warnings"][0]["kind"], "port-mapped");
  EXPECT_TRUE(fs::exists(tmp_ / "manifests" / "web.yaml"));
}

}  // namespace
