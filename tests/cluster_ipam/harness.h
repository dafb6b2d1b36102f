#pragma once
// Helpers of cluster-ipam's process tests: configs naming a test cluster, the plugin and
// `nodegate ipam` run as a runtime and an operator run them, results and errors read back.
//
// cluster-ipam never enters CNI_NETNS (it is an IPAM plugin: addresses only), so it runs in
// the machine's own namespace and reaches the test's members on loopback; CNI_NETNS names a
// path that does not exist, which proves it.

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/cni/types.h"
#include "tests/cluster_ipam/etcd_cluster.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::cluster_ipam::testing {

using nodegate::testing::PluginOutput;

inline constexpr char kNoNetns[] = "/run/netns/cluster-ipam-never-enters-this";

struct ConfOptions {
  std::string version = "1.1.0";
  std::string network = "net1";
  std::string node = "node-1";
  std::string ranges = R"([[{"subnet":"10.244.0.0/16","blockSize":26}]])";
  bool strict_affinity = false;
  std::string timeout = "5s";
  std::string extra_ipam;              // more "key":value pairs inside ipam, with a trailing comma
  std::string extra_etcd;              // more pairs inside ipam.etcd, with a trailing comma
  std::string extra_top;               // more pairs at the top, with a trailing comma
  std::vector<std::string> endpoints;  // default: the cluster's
  // ipam.agentSocket: "" (the default here) never asks an agent, so a test of the exec'd
  // plugin is not served by an agent someone runs on the machine's default socket.
  std::string agent_socket;
  // ipam.lockDir: default <the cluster's folder>/locks, the test's own.
  std::string lock_dir;
};

std::string Conf(const EtcdCluster& etcd, const ConfOptions& options);

// Runs build/bin/cluster-ipam with CNI_COMMAND=command.
PluginOutput Cni(const std::string& command, const std::string& conf, const std::string& id,
                 const std::string& ifname = "eth0", std::optional<long> kill_after_us = {},
                 const std::string& cni_args = "");

// The addresses of a result of any version ("10.244.0.2", "fd00::2"), in its order.
std::vector<std::string> AddressesOf(const std::string& result);
// The CNI error code on stdout (-1 when stdout is not an error object).
int ErrorCode(const PluginOutput& out);

// `nodegate ipam` with --conf a file holding `conf` as the only plugin of a list.
struct IpamRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};
IpamRun NodegateIpam(const std::string& conf, const std::vector<std::string>& args);
// check -o json: the kinds of problems found ("duplicate", "orphan-entry", ...).
std::vector<std::string> ProblemKinds(const std::string& conf,
                                      const std::vector<std::string>& extra = {});

// One `cluster-ipam agent` process (the node agent), serving on `socket`, its stderr (at debug)
// in the file `log`; killed when destroyed.
class Agent {
 public:
  Agent(std::string socket, std::string log) : socket_(std::move(socket)), log_(std::move(log)) {}
  ~Agent() { Kill(); }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Starts it; true once it says it serves on its socket and the socket accepts.
  bool Start();
  bool Connectable() const;
  void Kill() { Signal(SIGKILL); }
  // SIGTERM; the exit status, or -1 when it did not exit within 15 s.
  int Terminate() { return Signal(SIGTERM); }
  void Stop() { ::kill(pid_, SIGSTOP); }
  void Continue() { ::kill(pid_, SIGCONT); }
  bool Alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }
  const std::string& socket() const { return socket_; }
  std::string log() const;

 private:
  int Signal(int sig);

  std::string socket_, log_;
  pid_t pid_ = -1;
};

// Runs fn(i) for i in [0, count) on `threads` threads; returns the results in order of i.
std::vector<PluginOutput> InParallel(int count, int threads,
                                     const std::function<PluginOutput(int)>& fn);

}  // namespace nodegate::cluster_ipam::testing
