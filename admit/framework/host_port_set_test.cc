#include "admit/framework/host_port_set.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"

namespace nodegate::admit {
namespace {

struct CheckCase {
  std::string name;
  std::vector<HostPort> used;
  HostPort wanted;
  bool want_conflict;
};

HostPort P(std::string ip, std::string proto, int32_t port) {
  return HostPort::Normalized(ip, proto, port);
}

// Cases after staging/src/k8s.io/kube-scheduler/framework/types_test.go TestHostPortInfo_Check.
TEST(HostPortSetTest, FindConflict) {
  const std::vector<CheckCase> cases = {
      {"empty set", {}, P("", "", 80), false},
      {"empty ip and protocol conflict with 0.0.0.0/TCP",
       {P("0.0.0.0", "TCP", 80)},
       P("", "", 80),
       true},
      {"same ip, protocol and port", {P("127.0.0.1", "TCP", 80)}, P("127.0.0.1", "TCP", 80), true},
      {"same ip and port, different protocol",
       {P("127.0.0.1", "TCP", 80)},
       P("127.0.0.1", "UDP", 80),
       false},
      {"SCTP is its own protocol", {P("127.0.0.1", "TCP", 80)}, P("127.0.0.1", "SCTP", 80), false},
      {"different ips never conflict",
       {P("127.0.0.1", "TCP", 80)},
       P("127.0.0.2", "TCP", 80),
       false},
      {"different ports never conflict", {P("0.0.0.0", "TCP", 80)}, P("0.0.0.0", "TCP", 81), false},
      {"wanted 0.0.0.0 conflicts with any ip",
       {P("127.0.0.1", "TCP", 80)},
       P("0.0.0.0", "TCP", 80),
       true},
      {"used 0.0.0.0 conflicts with a specific ip",
       {P("0.0.0.0", "TCP", 80)},
       P("10.0.0.1", "TCP", 80),
       true},
      {"empty hostIP is 0.0.0.0 and conflicts with every address",
       {P("192.168.1.1", "UDP", 53)},
       P("", "UDP", 53),
       true},
      {"empty protocol is TCP", {P("127.0.0.1", "", 80)}, P("127.0.0.1", "TCP", 80), true},
      {"empty protocol does not match UDP",
       {P("127.0.0.1", "UDP", 80)},
       P("127.0.0.1", "", 80),
       false},
      {"the IPv6 wildcard is compared as a plain address",
       {P("::", "TCP", 80)},
       P("::1", "TCP", 80),
       false},
  };
  for (const CheckCase& c : cases) {
    HostPortSet set;
    for (const HostPort& p : c.used) {
      set.Add(p, PortHolder{"ns/holder", "c", ""});
    }
    EXPECT_EQ(set.FindConflict(c.wanted) != nullptr, c.want_conflict) << c.name;
  }
}

TEST(HostPortSetTest, RemovePodDropsOnlyItsEntries) {
  HostPortSet set;
  set.Add(P("", "", 80), PortHolder{"ns/a", "c", ""});
  set.Add(P("10.0.0.1", "UDP", 53), PortHolder{"ns/a", "c", ""});
  set.Add(P("10.0.0.2", "UDP", 53), PortHolder{"ns/b", "c", ""});
  ASSERT_EQ(set.size(), 3u);
  set.RemovePod("ns/a");
  EXPECT_EQ(set.size(), 1u);
  EXPECT_EQ(set.FindConflict(P("", "", 80)), nullptr);
  const HostPortSet::Entry* e = set.FindConflict(P("", "UDP", 53));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->holder.pod, "ns/b");
}

TEST(HostPortSetTest, GetHostPortsCountsSidecarsNotInitContainers) {
  const Pod pod = testing::MakePod()
                      .InitContainer("init")
                      .HostPort("TCP//1000")
                      .SidecarContainer("sidecar")
                      .HostPort("UDP/127.0.0.1/2000")
                      .Container("app")
                      .HostPort("//3000")
                      .ContainerPort(4000)  // hostPort 0: not a host port
                      .Obj();
  std::vector<WantedPort> ports = GetHostPorts(pod);
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].port, P("127.0.0.1", "UDP", 2000));
  EXPECT_EQ(ports[0].container, "sidecar");
  EXPECT_EQ(ports[1].port, P("0.0.0.0", "TCP", 3000));
  EXPECT_EQ(ports[1].container, "app");
  // With SidecarContainers off the API server drops restartPolicy: a plain init container.
  EXPECT_EQ(GetHostPorts(pod, /*sidecars_enabled=*/false).size(), 1u);
}

}  // namespace
}  // namespace nodegate::admit
