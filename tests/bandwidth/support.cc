#include "tests/bandwidth/support.h"

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace nodegate::bandwidth::testing {
namespace {
std::atomic<int> g_veth_counter{0};

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return text;
  }
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}
}  // namespace

Container AddContainer(const TestNetns& node, const std::string& container_ip4,
                       const std::string& node_ip4) {
  Container c;
  c.ns = std::make_unique<TestNetns>("ng-ctr");
  c.host_veth = "vb" + std::to_string(::getpid() % 100000) + "y" + std::to_string(g_veth_counter++);
  node.MustRun("ip link add " + c.host_veth + " type veth peer name " + c.ifname + " netns " +
               c.ns->name() + " && ip link set " + c.host_veth + " up");
  c.ns->MustRun("ip link set " + c.ifname + " up");
  if (!container_ip4.empty()) {
    c.ns->MustRun("ip addr add " + container_ip4 + "/24 dev " + c.ifname +
                  " && ip route add default via " + node_ip4);
    node.MustRun("ip addr add " + node_ip4 + "/24 dev " + c.host_veth);
  }
  return c;
}

std::string BandwidthConf(const std::string& host_veth, const std::string& netns_path,
                          const std::string& fields, const std::string& version,
                          bool with_prev_result, const std::string& network) {
  std::string conf =
      R"({"cniVersion":")" + version + R"(","name":")" + network + R"(","type":"bandwidth")";
  if (!fields.empty()) {
    conf += "," + fields;
  }
  if (with_prev_result) {
    conf += R"(,"prevResult":{"cniVersion":")" + version + R"(","interfaces":[{"name":")" +
            host_veth + R"("},{"name":"eth0","sandbox":")" + netns_path + R"("}]})";
  }
  return conf + "}";
}

std::string BandwidthConf(const NodeWithContainer& topo, const std::string& fields,
                          const std::string& version, bool with_prev_result) {
  return BandwidthConf(topo.host_veth, topo.container.path(), fields, version, with_prev_result);
}

PluginOutput Invoke(const std::string& binary, const std::string& command, const TestNetns& node,
                    const std::string& netns, const std::string& conf,
                    const std::string& container_id, const std::string& ifname) {
  nodegate::testing::PluginCall call;
  call.binary = binary;
  call.command = command;
  call.container_id = container_id;
  call.netns = netns;
  call.ifname = ifname;
  call.stdin_data = conf;
  call.run_in_netns = node.path();
  return nodegate::testing::RunPlugin(call);
}

PluginOutput Invoke(const std::string& binary, const std::string& command,
                    const NodeWithContainer& topo, const std::string& conf,
                    const std::string& container_id) {
  return Invoke(binary, command, topo.node, topo.container.path(), conf, container_id,
                topo.container_ifname);
}

std::string Ours() { return nodegate::testing::BinPath("bandwidth"); }
std::string Reference() { return nodegate::testing::ReferencePath("bandwidth"); }

std::string QdiscShow(const TestNetns& node, const std::string& host_veth) {
  return ReplaceAll(node.MustRun("tc -d qdisc show"), host_veth, "VETH");
}

std::string IngressFilterShow(const TestNetns& node, const std::string& host_veth) {
  return node.MustRun("tc filter show dev " + host_veth + " ingress");
}

std::string LinkNames(const TestNetns& node, const std::string& type) {
  return node.MustRun("ip -br link show type " + type + " | awk '{print $1}' | sort");
}

std::string SettledIfbNames(const TestNetns& node) {
  for (int i = 0; i < 500 && LinkNames(node, "ifb").find("bwpdel") != std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return LinkNames(node, "ifb");
}

::testing::AssertionResult FailsWith(const PluginOutput& out, int code, const std::string& text) {
  if (out.exit_code == 0) {
    return ::testing::AssertionFailure() << "succeeded, stdout: " << out.out;
  }
  auto j = nlohmann::json::parse(out.out, nullptr, false);
  if (j.is_discarded() || !j.contains("code") || !j.contains("msg")) {
    return ::testing::AssertionFailure()
           << "no error JSON; stdout: " << out.out << " stderr: " << out.err;
  }
  const int got_code = j["code"].get<int>();
  const std::string msg = j["msg"].get<std::string>();
  if (got_code != code || msg.find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "want code " << code << " with \"" << text << "\", got " << out.out;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Succeeds(const PluginOutput& out) {
  if (out.exit_code != 0) {
    return ::testing::AssertionFailure()
           << "exit " << out.exit_code << " stdout: " << out.out << " stderr: " << out.err;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace nodegate::bandwidth::testing

#include "plugins/bandwidth/plan.h"

namespace nodegate::bandwidth::testing {
std::string IfbNameFor(const std::string& network, const std::string& container_id) {
  return IfbName(network, container_id);
}
}  // namespace nodegate::bandwidth::testing
