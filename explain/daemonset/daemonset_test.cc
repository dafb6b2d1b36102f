// The DaemonSet controller's rule and the seed story from the cluster's side.
#include "explain/daemonset/daemonset.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "kube/decode/objects.h"

namespace nodegate::explain {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;
using nlohmann::json;

json CoreDnsNode() {
  return json::parse(R"({"apiVersion":"apps/v1","kind":"DaemonSet",
    "metadata":{"name":"coredns-node","namespace":"kube-system","uid":"ds-1"},
    "spec":{"selector":{"matchLabels":{"app":"coredns-node"}},
      "template":{"metadata":{"labels":{"app":"coredns-node"}},
        "spec":{"hostNetwork":true,"priorityClassName":"system-node-critical",
          "nodeSelector":{"kubernetes.io/os":"linux"},
          "containers":[{"name":"coredns","resources":{"requests":{"cpu":"100m"}},
            "ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53,"protocol":"TCP"}]}]}}}})");
}

admit::Node LinuxNode(const std::string& name) {
  return MakeNode(name)
      .Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})
      .Label("kubernetes.io/os", "linux")
      .Obj();
}

TEST(DaemonSetTest, SeedStory) {
  admit::FeatureGates gates;
  Cluster cluster;
  cluster.TrackOwner("DaemonSet kube-system/coredns-node");
  for (const char* n : {"n1", "n2", "n3", "n4"}) {
    cluster.AddNode(std::make_shared<const admit::Node>(LinuxNode(n)));
  }
  cluster.AddNode(
      std::make_shared<const admit::Node>(MakeNode("gpu-1")
                                              .Allocatable({{"cpu", "4"}, {"pods", "110"}})
                                              .Label("kubernetes.io/os", "linux")
                                              .Taint("nvidia.com/gpu", "present", "NoSchedule")
                                              .Obj()));
  cluster.AddNode(
      std::make_shared<const admit::Node>(MakeNode("win-1")
                                              .Allocatable({{"cpu", "4"}, {"pods", "110"}})
                                              .Label("kubernetes.io/os", "windows")
                                              .Obj()));
  // Its pods run on n1, n2, n4; on n3 another pod declares 53/UDP and its pod waits.
  for (const char* n : {"n1", "n2", "n4"}) {
    admit::Pod p = MakePod(std::string("coredns-node-") + n)
                       .Namespace("kube-system")
                       .Node(n)
                       .Phase("Running")
                       .HostNetwork()
                       .Container("coredns")
                       .ContainerPort(53, "UDP")
                       .Obj();
    p.owner = admit::OwnerReference{"DaemonSet", "coredns-node"};
    cluster.AddPod(kube::PodRecordOf(p, gates));
  }
  // Of the same priority: preemption cannot take its port.
  cluster.AddPod(kube::PodRecordOf(MakePod("dns-test")
                                       .Node("n3")
                                       .Phase("Running")
                                       .Priority(2000001000)
                                       .Container("dns")
                                       .HostPort("UDP//53")
                                       .Obj(),
                                   gates));
  json waiting = DaemonPodFor(CoreDnsNode(), "n3");
  waiting["metadata"]["name"] = "coredns-node-x7k2q";
  waiting["spec"]["priority"] = 2000001000;
  cluster.AddPod(kube::ObjectDecoder(gates).Pod(waiting.dump()).value());
  cluster.AddUnbound(waiting);

  Scheduler scheduler(cluster, SchedulerOptions{gates});
  auto e = ExplainDaemonSet(CoreDnsNode(), cluster, scheduler);
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_TRUE(e->host_network);
  EXPECT_EQ(e->host_ports, (std::vector<std::string>{"53/UDP on 0.0.0.0", "53/TCP on 0.0.0.0"}));
  EXPECT_EQ(e->desired, 4u);
  EXPECT_EQ(e->running, 3u);
  EXPECT_EQ(e->blocked, 1u);
  ASSERT_EQ(e->nodes.size(), 6u);
  const DaemonSetNode& n3 = e->nodes[2];
  EXPECT_EQ(n3.node, "n3");
  EXPECT_EQ(n3.state, DaemonSetNode::State::kBlocked);
  EXPECT_EQ(n3.pending_pod, "kube-system/coredns-node-x7k2q");
  ASSERT_TRUE(n3.verdict.has_value());
  EXPECT_EQ(n3.verdict->plugin, "NodePorts");
  ASSERT_FALSE(n3.verdict->findings.empty());
  ASSERT_EQ(n3.verdict->findings[0].ports.size(), 1u);
  EXPECT_EQ(n3.verdict->findings[0].ports[0].holder, "default/dns-test");
  EXPECT_EQ(n3.verdict->findings[0].ports[0].holder_container, "dns");
  ASSERT_TRUE(n3.summary.has_value());
  EXPECT_EQ(*n3.summary,
            "0/6 nodes are available: 1 node(s) didn't have free ports for the requested pod "
            "ports, 5 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to "
            "deallocate, preemption: 0/6 nodes are available: 1 No preemption victims found for "
            "incoming pod, 5 Preemption is not helpful for scheduling.");
  EXPECT_EQ(e->nodes[0].state, DaemonSetNode::State::kRuns);
  const DaemonSetNode& gpu = e->nodes[4];
  EXPECT_EQ(gpu.state, DaemonSetNode::State::kNotWanted);
  EXPECT_NE(gpu.why_not.find("nvidia.com/gpu=present:NoSchedule"), std::string::npos);
  const DaemonSetNode& win = e->nodes[5];
  EXPECT_EQ(win.state, DaemonSetNode::State::kNotWanted);
  EXPECT_NE(win.why_not.find("node selector"), std::string::npos);
}

TEST(DaemonSetTest, ControllerTolerationsAndPin) {
  json pod = DaemonPodFor(CoreDnsNode(), "n7");
  std::vector<std::string> keys;
  for (const json& t : pod["spec"]["tolerations"]) {
    keys.push_back(t["key"].get<std::string>() + ":" + t["effect"].get<std::string>());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"node.kubernetes.io/not-ready:NoExecute",
                                            "node.kubernetes.io/unreachable:NoExecute",
                                            "node.kubernetes.io/disk-pressure:NoSchedule",
                                            "node.kubernetes.io/memory-pressure:NoSchedule",
                                            "node.kubernetes.io/pid-pressure:NoSchedule",
                                            "node.kubernetes.io/unschedulable:NoSchedule",
                                            "node.kubernetes.io/network-unavailable:NoSchedule"}));
  EXPECT_EQ(PinnedNode(pod), "n7");
  // A cordoned node (its taint node.kubernetes.io/unschedulable) still wants the daemon pod.
  admit::FeatureGates gates;
  Cluster cluster;
  cluster.AddNode(std::make_shared<const admit::Node>(
      MakeNode("n7")
          .Allocatable({{"cpu", "4"}, {"pods", "110"}})
          .Label("kubernetes.io/os", "linux")
          .Unschedulable()
          .Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
          .Obj()));
  Scheduler scheduler(cluster, SchedulerOptions{gates});
  auto e = ExplainDaemonSet(CoreDnsNode(), cluster, scheduler);
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_EQ(e->nodes[0].state, DaemonSetNode::State::kWouldFit);
  EXPECT_FALSE(ExplainDaemonSet(json::parse(R"({"kind":"Deployment"})"), cluster, scheduler).ok());
}

}  // namespace
}  // namespace nodegate::explain
