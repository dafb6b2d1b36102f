#pragma once
// Throwaway network namespaces for the netns and e2e test tiers. Every kernel change a test
// makes happens inside namespaces created here, and they are deleted when the object goes
// out of scope (also when an assertion fails).
//
//   NG_REQUIRE_ROOT();                           // skip locally, fail loudly under CI
//   auto topo = NodeWithContainer::Create();     // node ns + container ns joined by a veth
//   topo.node.Run("ip -br addr");                // runs inside the node namespace
//
// Address plan (RFC 5737 / RFC 3849 documentation ranges, only ever inside test namespaces):
//   node<->container link  192.0.2.1/24  <-> 192.0.2.2/24,   2001:db8:2::1/64 <-> ::2
//   client<->node link     198.51.100.1/24 (node) <-> 198.51.100.2/24 (client)

#include <gtest/gtest.h>

#include <string>

namespace nodegate::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr interleaved
};

// Runs `sh -c command` and captures its output.
CommandResult RunCommand(const std::string& command);

bool IsRoot();
bool UnderCi();  // CI=true in the environment

// A named netns (/run/netns/NAME). The name is unique per process and object.
class TestNetns {
 public:
  explicit TestNetns(const std::string& prefix);
  ~TestNetns();
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  const std::string& name() const { return name_; }
  std::string path() const { return "/run/netns/" + name_; }
  // Runs a shell command inside the namespace (setns, as nsenter: /sys stays as it is).
  CommandResult Run(const std::string& command) const;
  // Like Run, but fails the current test when the command fails.
  std::string MustRun(const std::string& command) const;

 private:
  std::string name_;
};

// How many lines of `listing`'s standard output (run inside `ns`; its stderr dropped) contain
// `needle` (every line when `needle` is empty). An absence check must be able to fail: when the
// listing itself fails, it could not look, which is not "none": the current test fails and the
// answer is -1, which no expected count equals.
//   EXPECT_EQ(CountListed(node, "iptables-legacy-save -t nat", "18091"), 0);
int CountListed(const TestNetns& ns, const std::string& listing, const std::string& needle = "");

// A node namespace and a container namespace joined by a veth pair: `host_veth` in the node,
// `eth0` in the container, with the link addresses of the address plan, both links up and
// loopback up in both.
struct NodeWithContainer {
  TestNetns node{"ng-node"};
  TestNetns container{"ng-ctr"};
  std::string host_veth;
  std::string container_ifname = "eth0";
  std::string node_ip4 = "192.0.2.1";
  std::string container_ip4 = "192.0.2.2";
  std::string node_ip6 = "2001:db8:2::1";
  std::string container_ip6 = "2001:db8:2::2";

  NodeWithContainer();
};

// iptables-restore input (table nat) with `count` containers of network `network` in the
// reference portmap's layout, as another node's plugin would have left them: container "c<i>"
// maps TCP host port first_port + i to <subnet>.<i / 250>.<i % 250 + 2>:80, through chain
// CNI-DN-<first_chain + i> and an entry rule in CNI-HOSTPORT-DNAT naming its owner.
std::string ReferenceLayoutRules(int count, const std::string& network, int first_port,
                                 const std::string& subnet, int first_chain);

}  // namespace nodegate::testing

// In a netns/e2e test body: skip when not root, but fail when running under CI (which is
// root), so a privilege problem never turns into a silently green run.
#define NG_REQUIRE_ROOT()                                        \
  do {                                                           \
    if (!::nodegate::testing::IsRoot()) {                        \
      if (::nodegate::testing::UnderCi()) {                      \
        FAIL() << "netns tests need root, and CI must run them"; \
      }                                                          \
      GTEST_SKIP() << "needs root (creates network namespaces)"; \
    }                                                            \
  } while (0)
