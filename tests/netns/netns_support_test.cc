// netns tier: the namespace helpers every plugin test stands on. Needs root; makes and
// removes its own namespaces and never touches the machine's own.
#include <gtest/gtest.h>

#include <string>

#include "lib/sys/netns.h"
#include "tests/support/netns_fixture.h"

namespace nodegate::testing {
namespace {

bool NetnsExists(const std::string& name) {
  return RunCommand("ip netns list | grep -qw " + name).exit_code == 0;
}

TEST(NodeWithContainer, JoinsNamespacesWithAWorkingVeth) {
  NG_REQUIRE_ROOT();
  std::string node_name, container_name;
  {
    NodeWithContainer topo;
    node_name = topo.node.name();
    container_name = topo.container.name();
    EXPECT_TRUE(NetnsExists(node_name));
    // IPv4 and IPv6 reach across the veth, only inside the test namespaces.
    topo.container.MustRun("ping -c1 -W2 " + topo.node_ip4);
    topo.container.MustRun("ping -6 -c1 -W2 " + topo.node_ip6);
    EXPECT_NE(topo.node.MustRun("ip -o link show " + topo.host_veth).find(topo.host_veth),
              std::string::npos);
    // The machine's own namespace never sees the test links.
    EXPECT_NE(RunCommand("ip link show " + topo.host_veth).exit_code, 0);
  }
  EXPECT_FALSE(NetnsExists(node_name));
  EXPECT_FALSE(NetnsExists(container_name));
}

TEST(NetnsScope, EntersAndReturns) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-scope");
  ASSERT_FALSE(sys::IsCurrentNetns(ns.path()));
  {
    auto scope = sys::NetnsScope::Enter(ns.path());
    ASSERT_TRUE(scope.ok()) << scope.error().msg;
    EXPECT_TRUE(sys::IsCurrentNetns(ns.path()));
  }
  EXPECT_FALSE(sys::IsCurrentNetns(ns.path()));
}

TEST(NetnsScope, MissingPathIsInvalidNetns) {
  auto scope = sys::NetnsScope::Enter("/run/netns/does-not-exist-ng");
  ASSERT_FALSE(scope.ok());
  EXPECT_EQ(scope.error().code, kErrInvalidNetns);
}

}  // namespace
}  // namespace nodegate::testing
