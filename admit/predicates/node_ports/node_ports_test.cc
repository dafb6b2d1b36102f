#include "admit/predicates/node_ports/node_ports.h"

#include <gtest/gtest.h>

#include <initializer_list>

#include "admit/api/decode.h"
#include "admit/check/pod_facts.h"
#include "admit/testing/builders.h"
#include "admit/testing/filter_check.h"

namespace nodegate::admit::node_ports {
namespace {

using testing::MakeNode;
using testing::MakePod;

// NewPod: upstream's newPod(host, "PROTO/IP/PORT"...): one container with those host ports.
Pod NewPod(std::string name, std::initializer_list<std::string> ports) {
  auto b = MakePod(std::move(name)).Node("m1").Container("c");
  for (const std::string& p : ports) {
    b.HostPort(p);
  }
  return b.Obj();
}

struct Case {
  std::string name;
  Pod pod;
  std::vector<Pod> existing;
  bool want_fit;
};

// Cases from pkg/scheduler/framework/plugins/nodeports/node_ports_test.go TestNodePorts.
TEST(NodePortsTest, Filter) {
  const std::vector<Case> cases = {
      {"skip filter", MakePod("p").Obj(), {}, true},
      {"other port",
       NewPod("p", {"UDP/127.0.0.1/8080"}),
       {NewPod("e", {"UDP/127.0.0.1/9090"})},
       true},
      {"same udp port",
       NewPod("p", {"UDP/127.0.0.1/8080"}),
       {NewPod("e", {"UDP/127.0.0.1/8080"})},
       false},
      {"same tcp port",
       NewPod("p", {"TCP/127.0.0.1/8080"}),
       {NewPod("e", {"TCP/127.0.0.1/8080"})},
       false},
      {"different host ip",
       NewPod("p", {"TCP/127.0.0.1/8080"}),
       {NewPod("e", {"TCP/127.0.0.2/8080"})},
       true},
      {"different protocol",
       NewPod("p", {"UDP/127.0.0.1/8080"}),
       {NewPod("e", {"TCP/127.0.0.1/8080"})},
       true},
      {"second udp port conflict",
       NewPod("p", {"UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"}),
       {NewPod("e", {"UDP/127.0.0.1/8080"})},
       false},
      {"first tcp port conflict",
       NewPod("p", {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"}),
       {NewPod("e", {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"})},
       false},
      {"first tcp port conflict due to 0.0.0.0 hostIP",
       NewPod("p", {"TCP/0.0.0.0/8001"}),
       {NewPod("e", {"TCP/127.0.0.1/8001"})},
       false},
      {"TCP hostPort conflict due to 0.0.0.0 hostIP",
       NewPod("p", {"TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"}),
       {NewPod("e", {"TCP/127.0.0.1/8001"})},
       false},
      {"second tcp port conflict to 0.0.0.0 hostIP",
       NewPod("p", {"TCP/127.0.0.1/8001"}),
       {NewPod("e", {"TCP/0.0.0.0/8001"})},
       false},
      {"second different protocol",
       NewPod("p", {"UDP/127.0.0.1/8001"}),
       {NewPod("e", {"TCP/0.0.0.0/8001"})},
       true},
      {"UDP hostPort conflict due to 0.0.0.0 hostIP",
       NewPod("p", {"UDP/127.0.0.1/8001"}),
       {NewPod("e", {"TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"})},
       false},
      {"empty hostIP and protocol default to 0.0.0.0 and TCP",
       NewPod("p", {"//8080"}),
       {NewPod("e", {"TCP/10.1.2.3/8080"})},
       false},
      {"hostPort 0 is ignored",
       MakePod("p").Container("c").ContainerPort(8080).Obj(),
       {MakePod("e").Container("c").ContainerPort(8080).Obj()},
       true},
      {"ports within the candidate itself are not checked against each other",
       NewPod("p", {"TCP//8080", "TCP//8080"}),
       {},
       true},
      {"restartable init container ports conflict",
       MakePod("p").SidecarContainer("proxy").HostPort("TCP//15001").Obj(),
       {NewPod("e", {"TCP//15001"})},
       false},
      {"existing pod's restartable init container ports are used",
       NewPod("p", {"TCP//15001"}),
       {MakePod("e").SidecarContainer("proxy").HostPort("TCP//15001").Obj()},
       false},
      {"ordinary init container ports do not conflict",
       MakePod("p").InitContainer("init").HostPort("TCP//8080").Obj(),
       {NewPod("e", {"TCP//8080"})},
       true},
      {"existing pod's ordinary init container ports are not used",
       NewPod("p", {"TCP//8080"}),
       {MakePod("e").InitContainer("init").HostPort("TCP//8080").Obj()},
       true},
  };
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::CheckFilter(*plugin, gates, {c.pod, MakeNode("m1").Obj(), c.existing}, c.want_fit,
                         {Code::kUnschedulable, kErrReason}, "held by pod default/e");
  }
}

TEST(NodePortsTest, HostNetworkContainerPortsAreHostPorts) {
  // API defaulting copies containerPort to hostPort for hostNetwork pods.
  Pod dns = MakePod("dns").HostNetwork().Container("coredns").ContainerPort(53, "UDP").Obj();
  ApplyHostNetworkPortDefaults(dns);
  const FeatureGates gates;
  NodeInfo node(MakeNode("m1").Obj());
  node.AddPod(MakePodFacts(dns, gates, true));
  Status s = New(PredicateOptions{gates})
                 ->Filter(MakePodInfo(NewPod("p", {"UDP/10.0.0.1/53"}), gates, false), node);
  ASSERT_FALSE(s.IsSuccess());
  EXPECT_NE(s.failures()[0].detail.find("container \"coredns\" (53/UDP on 0.0.0.0)"),
            std::string::npos)
      << s.failures()[0].detail;
}

TEST(NodePortsTest, DetailNamesPortAndHolder) {
  const FeatureGates gates;
  NodeInfo node(MakeNode("m1").Obj());
  node.AddPod(MakePodFacts(MakePod("web")
                               .Namespace("kube-system")
                               .Source("/etc/kubernetes/manifests/web.yaml")
                               .Container("nginx")
                               .HostPort("TCP/127.0.0.1/8080")
                               .Obj(),
                           gates, true));
  Pod pod = MakePod("dns").Container("node-cache").HostPort("UDP//53").HostPort("//8080").Obj();
  Status s = New(PredicateOptions{gates})->Filter(MakePodInfo(pod, gates, false), node);
  ASSERT_FALSE(s.IsSuccess());
  EXPECT_EQ(s.failures()[0].detail,
            "hostPort 8080/TCP on 0.0.0.0 (container \"node-cache\") is held by pod "
            "kube-system/web, container \"nginx\" (8080/TCP on 127.0.0.1) from "
            "/etc/kubernetes/manifests/web.yaml");
}

}  // namespace
}  // namespace nodegate::admit::node_ports
