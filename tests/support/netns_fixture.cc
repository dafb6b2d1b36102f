#include "tests/support/netns_fixture.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace nodegate::testing {

namespace {

// `sh -c command`, its stdout and stderr captured, run in the network namespace at
// `netns_path` when there is one. The child is a vfork: netns tests run thousands of these,
// and a shell plus nsenter in front of each command cost about 5 ms more here.
CommandResult RunShell(const std::string& command, const std::string& netns_path) {
  CommandResult result;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  const char* const argv[] = {"sh", "-c", command.c_str(), nullptr};
  const char* const netns = netns_path.empty() ? nullptr : netns_path.c_str();
  const pid_t pid = ::vfork();
  if (pid == 0) {
    // Only system calls here: the child shares the parent's memory until it execs.
    if (netns != nullptr) {
      const int fd = ::open(netns, O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(126);
    }
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv("/bin/sh", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    return result;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

CommandResult RunCommand(const std::string& command) { return RunShell(command, ""); }

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

CommandResult TestNetns::Run(const std::string& command) const { return RunShell(command, path()); }

std::string TestNetns::MustRun(const std::string& command) const {
  auto r = Run(command);
  EXPECT_EQ(r.exit_code, 0) << "in " << name_ << ": " << command << "\n" << r.output;
  return r.output;
}

int CountListed(const TestNetns& ns, const std::string& listing, const std::string& needle) {
  const auto r = ns.Run(listing + " 2>/dev/null");
  if (r.exit_code != 0) {
    ADD_FAILURE() << "could not look: `" << listing << "` in " << ns.name() << " exited "
                  << r.exit_code << ":\n"
                  << ns.Run(listing).output;
    return -1;
  }
  int count = 0;
  const std::string_view out = r.output;
  for (size_t start = 0; start < out.size();) {
    const size_t end = std::min(out.find('\n', start), out.size());
    const std::string_view line = out.substr(start, end - start);
    if (!line.empty() && line.find(needle) != std::string_view::npos) ++count;
    start = end + 1;
  }
  return count;
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
