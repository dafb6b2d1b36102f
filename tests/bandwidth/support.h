#pragma once
// Helpers for the bandwidth netns tests: a config with a prevResult that describes a
// NodeWithContainer, running a plugin binary (ours or the reference) inside the node namespace,
// extra containers on the same node, and `tc` output with device names normalised so our
// kernel state can be compared with the reference's line by line.

#include <memory>
#include <string>

#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::bandwidth::testing {

using nodegate::testing::NodeWithContainer;
using nodegate::testing::PluginOutput;
using nodegate::testing::TestNetns;

// A container namespace joined to `node` by a veth (host end `host_veth`, container end eth0).
struct Container {
  std::unique_ptr<TestNetns> ns;
  std::string host_veth;
  std::string ifname = "eth0";
};
Container AddContainer(const TestNetns& node, const std::string& container_ip4 = "",
                       const std::string& node_ip4 = "");

// `{"cniVersion", "name", "type":"bandwidth", <fields>, "prevResult": {...}}`. The prevResult
// lists the host veth (no sandbox) and the container interface, as a main plugin would.
std::string BandwidthConf(const std::string& host_veth, const std::string& netns_path,
                          const std::string& fields, const std::string& version = "1.0.0",
                          bool with_prev_result = true, const std::string& network = "rnet");
std::string BandwidthConf(const NodeWithContainer& topo, const std::string& fields,
                          const std::string& version = "1.0.0", bool with_prev_result = true);

// Runs `binary` with CNI_COMMAND=`command` inside `node`. An empty netns leaves CNI_NETNS unset.
PluginOutput Invoke(const std::string& binary, const std::string& command, const TestNetns& node,
                    const std::string& netns, const std::string& conf,
                    const std::string& container_id = "ctr1", const std::string& ifname = "eth0");
PluginOutput Invoke(const std::string& binary, const std::string& command,
                    const NodeWithContainer& topo, const std::string& conf,
                    const std::string& container_id = "ctr1");

std::string Ours();
std::string Reference();

// `tc -d qdisc show` / `tc filter show dev X ingress` inside the node, with the host veth's
// name replaced by VETH.
std::string QdiscShow(const TestNetns& node, const std::string& host_veth);
std::string IngressFilterShow(const TestNetns& node, const std::string& host_veth);
std::string LinkNames(const TestNetns& node, const std::string& type);  // "ip -br link show type"

// The ifbs of `node` once the helpers of earlier DELs are done: DEL renames an ifb it takes out
// of service to bwpdel<9 hex digits of its name> and leaves the deletion (an RCU barrier) to a
// detached helper. Waits up to 5 s for those to go, then lists like LinkNames(node, "ifb").
std::string SettledIfbNames(const TestNetns& node);

// True when the plugin's error output (stdout JSON) has `code` and its msg contains `text`.
::testing::AssertionResult FailsWith(const PluginOutput& out, int code, const std::string& text);
::testing::AssertionResult Succeeds(const PluginOutput& out);

}  // namespace nodegate::bandwidth::testing

namespace nodegate::bandwidth::testing {
// The reference's ifb name for (network, containerID).
std::string IfbNameFor(const std::string& network, const std::string& container_id);
}  // namespace nodegate::bandwidth::testing
