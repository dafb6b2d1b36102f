#pragma once
// Support of the bridge plugin's netns tests: a node namespace with container namespaces, the
// plugin (ours or Debian's reference) run inside the node with the PATH of an iptables mode,
// and the node's and containers' kernel state as normalised text, so two nodes set up by the
// two plugins compare equal when they hold the same objects.
//
//   BridgeNode ours("ours"), ref("ref");
//   PluginOutput a = ours.Run(Ours(), "ADD", "c1", conf);
//   EXPECT_EQ(ours.State(), ref.State());

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::bridge::testing {

using nodegate::testing::PluginCall;
using nodegate::testing::PluginOutput;
using nodegate::testing::TestNetns;

enum class Mode { kNft, kLegacy };
std::string ModeName(Mode mode);  // "nft", "legacy"
// A folder whose iptables, ip6tables and their -save/-restore are the tools of `mode`, put
// first on the plugins' PATH: both plugins pick the iptables mode from it.
std::string ModeBinDir(Mode mode);

std::string Ours();       // build/bin/bridge
std::string Reference();  // /usr/lib/cni/bridge
// CNI_PATH folders whose host-local is ours or the reference's.
std::string OurIpamPath();
std::string ReferenceIpamPath();

// A node namespace, its containers' namespaces (made on first use), and a host-local data dir.
class BridgeNode {
 public:
  explicit BridgeNode(const std::string& label, Mode mode = Mode::kNft);
  ~BridgeNode();

  const TestNetns& node() const { return node_; }
  const TestNetns& Container(const std::string& id);
  // Deletes the container's namespace (for DEL with the namespace gone).
  void RemoveContainer(const std::string& id);
  bool Removed(const std::string& id) const { return removed_.count(id) != 0; }
  std::string data_dir() const { return data_dir_; }
  Mode mode() const { return mode_; }

  // An environment variable every later Run sets.
  void SetEnv(const std::string& name, const std::string& value) { extra_env_[name] = value; }
  // Runs `binary` with CNI_COMMAND `command` for container `id` (ifname eth0 unless given).
  PluginOutput Run(const std::string& binary, const std::string& command, const std::string& id,
                   const std::string& conf, const std::string& cni_path,
                   const std::string& ifname = "eth0", const std::string& cni_args = "");

  // The node's links, addresses, routes, bridge ports and VLANs, forwarding and accept_ra
  // sysctls, table nat of both families in this mode and the nftables ruleset; the random
  // parts (veth names, MACs, link-local addresses, timers, counters, namespace ids) replaced.
  std::string NodeState() const;
  // One container's interface, addresses, routes and sysctls, normalised the same way.
  std::string ContainerState(const std::string& id);
  // host-local's files (name: content) under the data dir.
  std::string IpamState() const;
  // All of it.
  std::string State(const std::vector<std::string>& containers);

 private:
  std::string label_;
  Mode mode_;
  TestNetns node_;
  std::map<std::string, std::unique_ptr<TestNetns>> containers_;
  std::set<std::string> removed_;
  std::string data_dir_;
  std::map<std::string, std::string> extra_env_;
};

// A bridge conflist-less config: name net1, the given version, `extra` keys spliced in the top
// level (starting with a comma when not empty), and an ipam section writing to `data_dir` when
// `ipam_ranges` is not empty ("[[{\"subnet\":...}]]").
std::string BridgeConf(const std::string& version, const std::string& extra,
                       const std::string& data_dir, const std::string& ipam_ranges,
                       const std::string& ipam_extra = "");

// `conf` with "prevResult" set to `result` (an ADD's stdout).
std::string WithPrevResult(const std::string& conf, const std::string& result);

// The random parts of a plugin's output or a state listing replaced (see NodeState), and the
// container namespace paths of `node` written as NETNS/<id>.
std::string Normalise(std::string text);

// The error JSON's "msg" ("" when stdout is not one).
std::string ErrorMessage(const PluginOutput& out);

// The lines only one of the two texts has, marked "ours:" or "ref:" ("" when equal).
std::string LineDiff(const std::string& ours, const std::string& ref);

bool Succeeds(const PluginOutput& out);

}  // namespace nodegate::bridge::testing
