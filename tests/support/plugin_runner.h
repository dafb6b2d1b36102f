#pragma once
// Executes a built plugin binary the way a runtime does: CNI_* variables in the environment,
// the config on stdin, stdout and stderr captured apart.
//
//   PluginCall call{.binary = BinPath("portmap"), .command = "ADD", .container_id = "c1",
//                   .netns = topo.container.path(), .ifname = "eth0", .stdin_data = conf};
//   PluginOutput out = RunPlugin(call);

#include <map>
#include <optional>
#include <string>

namespace nodegate::testing {

struct PluginCall {
  std::string binary;
  std::string command;
  std::string container_id;
  std::string netns;
  std::string ifname;
  std::string args;
  std::string path = "/usr/lib/cni";
  std::string stdin_data;
  std::map<std::string, std::string> extra_env;
  // When set, the plugin runs inside this netns (the "node"), as a runtime on that node would.
  std::string run_in_netns;
  // When set, the plugin is sent SIGKILL this many microseconds after it started, if it is
  // still running (crash-consistency tests).
  std::optional<long> kill_after_us;
  // When set, the call returns once the plugin and every process it left behind have exited
  // (portmap's UDP conntrack flush runs in the helper it starts at exit, lib/netfilter/
  // release.h): tests of what that helper does wait for it. Not with kill_after_us.
  bool wait_for_detached = false;
};

struct PluginOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool killed = false;  // ended by SIGKILL (kill_after_us)
};

PluginOutput RunPlugin(const PluginCall& call);

// $NODEGATE_BIN_DIR/<name> (set by CTest), else build/bin/<name>. $NODEGATE_BIN_DIR_OVERRIDE,
// when set, wins over both: `make test` runs the netns tier a second time against the
// AddressSanitizer + UndefinedBehaviorSanitizer builds of the executables that way.
std::string BinPath(const std::string& name);

// Debian's reference plugin: /usr/lib/cni/<name>.
std::string ReferencePath(const std::string& name);

}  // namespace nodegate::testing
