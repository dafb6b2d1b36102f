#include "explain/pending/pending.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "kube/decode/objects.h"

namespace nodegate::explain {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;
using nlohmann::json;

json PendingPod(const std::string& ns, const std::string& name, const std::string& cpu,
                int host_port) {
  json pod = {{"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"containers",
                 json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}},
              {"status", {{"phase", "Pending"}}}};
  if (host_port > 0) {
    pod["spec"]["containers"][0]["ports"] =
        json::array({{{"containerPort", host_port}, {"hostPort", host_port}, {"protocol", "UDP"}}});
  }
  return pod;
}

TEST(PendingTest, GroupedByWhatBlocksThemWithHoldersAggregated) {
  admit::FeatureGates gates;
  Cluster cluster;
  for (const char* n : {"n1", "n2", "n3"}) {
    cluster.AddNode(std::make_shared<const admit::Node>(
        MakeNode(n).Allocatable({{"cpu", "2"}, {"pods", "110"}}).Obj()));
    admit::Pod dns = MakePod(std::string("node-local-dns-") + n)
                         .Namespace("kube-system")
                         .Node(n)
                         .Container("node-cache")
                         .HostPort("UDP//53")
                         .Obj();
    dns.owner = admit::OwnerReference{"DaemonSet", "node-local-dns"};
    cluster.AddPod(kube::PodRecordOf(dns, gates));
  }
  for (const json& p :
       {PendingPod("kube-system", "coredns-a", "10m", 53), PendingPod("default", "big", "3", 0),
        PendingPod("default", "small", "1", 0), PendingPod("other", "big2", "3", 0)}) {
    cluster.AddUnbound(p);
  }
  Scheduler scheduler(cluster, SchedulerOptions{gates});
  PendingReport all = ExplainPending(cluster, scheduler, "");
  EXPECT_EQ(all.pods.size(), 4u);
  EXPECT_EQ(all.fit_nowhere, 3u);
  EXPECT_EQ(all.fit_now, 1u);
  const Blocker* port = nullptr;
  const Blocker* cpu = nullptr;
  for (const Blocker& b : all.blockers) {
    if (b.what == "host port 53/UDP") {
      port = &b;
    }
    if (b.what == "Insufficient cpu") {
      cpu = &b;
    }
  }
  ASSERT_NE(port, nullptr);
  EXPECT_EQ(port->detail, "held on 3 nodes by pods of DaemonSet kube-system/node-local-dns");
  ASSERT_EQ(port->pods.size(), 1u);
  EXPECT_EQ(port->pods[0].pod, "kube-system/coredns-a");
  EXPECT_EQ(port->pods[0].nodes, 3u);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->pods.size(), 2u);
  EXPECT_EQ(cpu->detail, "on 3 nodes");
  EXPECT_EQ(all.blockers.front().what, "Insufficient cpu");  // the most pods first

  PendingReport one = ExplainPending(cluster, scheduler, "default");
  EXPECT_EQ(one.pods.size(), 2u);
  EXPECT_EQ(one.scope, "namespace default");
}

}  // namespace
}  // namespace nodegate::explain
