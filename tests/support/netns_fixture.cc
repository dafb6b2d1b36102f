#include "tests/support/netns_fixture.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace nodegate::testing {

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  const std::string full = "(" + command + ") 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    result.output.append(buf, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool IsRoot() { return ::geteuid() == 0; }

bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

namespace {
std::atomic<int> g_counter{0};
}  // namespace

TestNetns::TestNetns(const std::string& prefix) {
  name_ = prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter++);
  const auto r =
      RunCommand("ip netns add " + name_ + " && ip netns exec " + name_ + " ip link set lo up");
  if (r.exit_code != 0) {
    ADD_FAILURE() << "ip netns add " << name_ << ": " << r.output;
  }
}

TestNetns::~TestNetns() { RunCommand("ip netns del " + name_ + " 2>/dev/null"); }

CommandResult TestNetns::Run(const std::string& command) const {
  // Single quotes inside the command are escaped for the outer sh -c.
  std::string escaped;
  for (char c : command) {
    if (c == '\'') {
      escaped += "'\\''";
    } else {
      escaped += c;
    }
  }
  return RunCommand("nsenter --net=" + path() + " sh -c '" + escaped + "'");
}

std::string TestNetns::MustRun(const std::string& command) const {
  auto r = Run(command);
  EXPECT_EQ(r.exit_code, 0) << "in " << name_ << ": " << command << "\n" << r.output;
  return r.output;
}

NodeWithContainer::NodeWithContainer() {
  host_veth = "vh" + std::to_string(::getpid() % 100000) + "x" + std::to_string(g_counter++);
  node.MustRun("ip link add " + host_veth + " type veth peer name " + container_ifname + " netns " +
               container.name());
  node.MustRun("ip addr add " + node_ip4 + "/24 dev " + host_veth + " && ip -6 addr add " +
               node_ip6 + "/64 dev " + host_veth + " nodad && ip link set " + host_veth + " up");
  container.MustRun("ip addr add " + container_ip4 + "/24 dev " + container_ifname +
                    " && ip -6 addr add " + container_ip6 + "/64 dev " + container_ifname +
                    " nodad && ip link set " + container_ifname +
                    " up && ip route add default via " + node_ip4 +
                    " && ip -6 route add default via " + node_ip6);
}

std::string ReferenceLayoutRules(int count, const std::string& network, int first_port,
                                 const std::string& subnet, int first_chain) {
  std::string rules = "*nat\n:CNI-HOSTPORT-DNAT - [0:0]\n";
  for (int i = 0; i < count; ++i) {
    const std::string chain = "CNI-DN-" + std::to_string(first_chain + i);
    const std::string port = std::to_string(first_port + i);
    rules += ":" + chain + " - [0:0]\n-A " + chain + " -p tcp -m tcp --dport " + port +
             " -j DNAT --to-destination " + subnet + "." + std::to_string(i / 250) + "." +
             std::to_string(i % 250 + 2) + ":80\n";
    rules += "-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"" + network +
             "\\\" id: \\\"c" + std::to_string(i) + "\\\"\" -m multiport --dports " + port +
             " -j " + chain + "\n";
  }
  return rules + "COMMIT\n";
}

}  // namespace nodegate::testing
