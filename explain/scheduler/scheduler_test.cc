// The default scheduler over small clusters: verdicts, explanations, the FitError line (its
// preemption part built from DefaultPreemption's upstream test cases: default_preemption_test.go
// TestPostFilter), coverage.
#include "explain/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include "admit/api/decode.h"
#include "admit/testing/builders.h"
#include "kube/decode/objects.h"

namespace nodegate::explain {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;
using admit::testing::Req;
using nlohmann::json;

admit::FeatureGates Gates(bool dra = true) {
  admit::FeatureGates g;
  g.Set(admit::kGateDynamicResourceAllocation, dra);
  return g;
}

class Fixture {
 public:
  explicit Fixture(bool dra = true) : gates_(Gates(dra)) {}
  Fixture& Node(const admit::Node& n) {
    cluster_.AddNode(std::make_shared<const admit::Node>(n));
    return *this;
  }
  Fixture& Pod(const admit::Pod& p) {
    cluster_.AddPod(kube::PodRecordOf(p, gates_));
    return *this;
  }
  Fixture& Unbound(const json& object) {
    cluster_.AddUnbound(object);
    return *this;
  }
  Cluster& cluster() { return cluster_; }
  PodExplanation Explain(const admit::Pod& pod) {
    CandidatePod c;
    c.pod = pod;
    return Explain(c);
  }
  PodExplanation Explain(const CandidatePod& c) {
    Scheduler s(cluster_, SchedulerOptions{gates_});
    return s.Explain(c);
  }

 private:
  admit::FeatureGates gates_;
  Cluster cluster_;
};

admit::Node SmallNode(const std::string& name, const char* cpu = "4", const char* pods = "110") {
  return MakeNode(name).Allocatable({{"cpu", cpu}, {"memory", "8Gi"}, {"pods", pods}}).Obj();
}

admit::Pod Owned(admit::Pod p, const std::string& kind, const std::string& name) {
  p.owner = admit::OwnerReference{kind, name};
  admit::ApplyHostNetworkPortDefaults(p);  // what the API server does to hostNetwork pods
  return p;
}

const NodeVerdict& VerdictOn(const PodExplanation& e, const std::string& node) {
  for (const NodeVerdict& v : e.nodes) {
    if (v.node == node) {
      return v;
    }
  }
  static const NodeVerdict none;
  ADD_FAILURE() << "no verdict for " << node;
  return none;
}

TEST(SchedulerTest, SeedStoryNamesTheHolderOfTheHostPort) {
  // A hostNetwork DaemonSet pod (53/UDP), pinned to n3 as the controller pins it, where another
  // DaemonSet's pod declares 53/UDP.
  Fixture f;
  for (const char* n : {"n1", "n2", "n3", "n4", "n5"}) {
    f.Node(SmallNode(n));
  }
  f.Pod(Owned(MakePod("node-local-dns-7xk2p")
                  .Namespace("kube-system")
                  .Node("n3")
                  .HostNetwork()
                  .Priority(2000001000)
                  .Container("node-cache", {{"cpu", "25m"}})
                  .ContainerPort(53, "UDP")
                  .Obj(),
              "DaemonSet", "node-local-dns"));
  admit::Pod dns = Owned(MakePod("coredns-node-q8w4z")
                             .Namespace("kube-system")
                             .HostNetwork()
                             .Priority(2000001000)
                             .Container("coredns", {{"cpu", "100m"}})
                             .ContainerPort(53, "UDP")
                             .RequiredAffinityTerm({}, {Req("metadata.name", "In", {"n3"})})
                             .Obj(),
                         "DaemonSet", "coredns-node");
  PodExplanation e = f.Explain(dns);
  ASSERT_TRUE(e.summary.has_value()) << e.summary_withheld;
  // The head matches what a cluster printed for the same situation (a node-exporter DaemonSet:
  // "0/7 nodes are available: 1 node(s) didn't have free ports for the requested pod ports,
  // 6 node(s) didn't satisfy plugin(s) [NodeAffinity]").
  EXPECT_EQ(*e.summary,
            "0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod "
            "ports, 4 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to "
            "deallocate, preemption: 0/5 nodes are available: 1 No preemption victims found for "
            "incoming pod, 4 Preemption is not helpful for scheduling.");
  ASSERT_EQ(e.nodes.size(), 1u);
  EXPECT_EQ(e.not_considered, 4u);
  const NodeVerdict& v = VerdictOn(e, "n3");
  EXPECT_EQ(v.plugin, "NodePorts");
  ASSERT_EQ(v.findings.size(), 1u);
  ASSERT_EQ(v.findings[0].ports.size(), 1u);
  const PortHolding& h = v.findings[0].ports[0];
  EXPECT_EQ(h.holder, "kube-system/node-local-dns-7xk2p");
  EXPECT_EQ(h.holder_container, "node-cache");
  EXPECT_EQ(h.owner, "DaemonSet kube-system/node-local-dns");
  EXPECT_EQ(h.port, "53/UDP on 0.0.0.0");
  EXPECT_NE(v.findings[0].explanation.find("DaemonSet kube-system/node-local-dns"),
            std::string::npos);
}

TEST(SchedulerTest, InsufficientCpuNamesTheBiggestConsumers) {
  Fixture f;
  f.Node(SmallNode("n1", "2")).Node(SmallNode("n2", "2"));
  f.Pod(Owned(MakePod("api-1").Node("n1").Container("c", {{"cpu", "1"}}).Obj(), "ReplicaSet",
              "api-5d9"));
  f.Pod(MakePod("cron").Node("n1").Container("c", {{"cpu", "500m"}}).Obj());
  f.Pod(MakePod("idle").Node("n1").Container("c").Obj());
  f.Pod(MakePod("db-0").Node("n2").Container("c", {{"cpu", "1500m"}}).Obj());
  PodExplanation e = f.Explain(MakePod("web").Container("c", {{"cpu", "1"}}).Obj());
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary,
            "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming "
            "pod.");
  const NodeVerdict& v = VerdictOn(e, "n1");
  ASSERT_EQ(v.findings.size(), 1u);
  ASSERT_TRUE(v.findings[0].shortage.has_value());
  const Shortage& s = *v.findings[0].shortage;
  EXPECT_EQ(s.resource, "cpu");
  EXPECT_EQ(s.requested, 1000);
  EXPECT_EQ(s.used, 1500);
  EXPECT_EQ(s.capacity, 2000);
  EXPECT_EQ(s.consumers, 2u);
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].pod, "default/api-1");
  EXPECT_EQ(s.top[0].owner, "ReplicaSet default/api-5d9");
  EXPECT_EQ(s.top[1].pod, "default/cron");
}

TEST(SchedulerTest, TaintsAffinityAndCordonAreUnresolvable) {
  Fixture f;
  f.Node(MakeNode("gpu-1")
             .Allocatable({{"cpu", "4"}, {"pods", "110"}})
             .Taint("nvidia.com/gpu", "present", "NoSchedule")
             .Label("zone", "a")
             .Obj());
  f.Node(MakeNode("b-1").Allocatable({{"cpu", "4"}, {"pods", "110"}}).Label("zone", "b").Obj());
  f.Node(MakeNode("a-1")
             .Allocatable({{"cpu", "4"}, {"pods", "110"}})
             .Label("zone", "a")
             .Unschedulable()
             .Obj());
  PodExplanation e = f.Explain(MakePod("web").NodeSelector("zone", "a").Container("c").Obj());
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary,
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 "
            "node(s) had untolerated taint(s), 1 node(s) were unschedulable. no new claims to "
            "deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
            "scheduling.");
  const NodeVerdict& gpu = VerdictOn(e, "gpu-1");
  EXPECT_EQ(gpu.plugin, "TaintToleration");
  ASSERT_TRUE(gpu.findings[0].taint.has_value());
  EXPECT_EQ(gpu.findings[0].taint->key, "nvidia.com/gpu");
  EXPECT_EQ(VerdictOn(e, "b-1").plugin, "NodeAffinity");
  EXPECT_FALSE(VerdictOn(e, "b-1").findings[0].explanation.empty());
  EXPECT_EQ(VerdictOn(e, "a-1").plugin, "NodeUnschedulable");
  EXPECT_TRUE(e.preemption.attempted);
  EXPECT_TRUE(e.preemption.nodes.empty());
}

TEST(SchedulerTest, SeventeenTaintedNodesAsAClusterReportedThem) {
  // A user's FailedScheduling event of 2026: "0/17 nodes are available: 17 node(s) had
  // untolerated taint(s). no new claims to deallocate, preemption: 0/17 nodes are available:
  // 17 Preemption is not helpful for scheduling."
  Fixture f;
  for (int i = 0; i < 17; ++i) {
    f.Node(MakeNode("n" + std::to_string(i))
               .Allocatable({{"cpu", "4"}, {"pods", "110"}})
               .Taint("dedicated", "infra", "NoSchedule")
               .Obj());
  }
  PodExplanation e = f.Explain(MakePod("web").Container("c").Obj());
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary,
            "0/17 nodes are available: 17 node(s) had untolerated taint(s). no new claims to "
            "deallocate, preemption: 0/17 nodes are available: 17 Preemption is not helpful for "
            "scheduling.");
}

TEST(SchedulerTest, UpstreamPostFilterCasesSimulated) {
  // default_preemption_test.go TestPostFilter, the cluster rebuilt and run through the Filters
  // (DynamicResources off, as in that test's profile).
  {
    // "pod with tied priority is still unschedulable": one-pod nodes.
    Fixture f(/*dra=*/false);
    f.Node(SmallNode("node1", "4", "1")).Pod(MakePod("p1").Node("node1").Container("c").Obj());
    PodExplanation e = f.Explain(MakePod("p").Container("c").Obj());
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_EQ(*e.summary,
              "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 "
              "No preemption victims found for incoming pod.");
  }
  {
    // "pod can be made schedulable on one node": the low-priority pod is the victim.
    Fixture f(false);
    f.Node(SmallNode("node1", "4", "1")).Node(SmallNode("node2", "4", "1"));
    f.Pod(MakePod("p1").Node("node1").Priority(1000).Container("c").Obj());
    f.Pod(MakePod("p2").Node("node2").Priority(10).Container("c").Obj());
    PodExplanation e = f.Explain(MakePod("p").Priority(100).Container("c").Obj());
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_EQ(*e.summary, "0/2 nodes are available: 2 Too many pods.");  // preemption succeeds
    EXPECT_EQ(e.preemption.nominated, "node2");
    EXPECT_EQ(e.preemption.candidates, 1u);
  }
  {
    // "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU".
    Fixture f(false);
    f.Node(SmallNode("node1", "4", "1"))
        .Node(SmallNode("node2", "2"))
        .Node(SmallNode("node3", "4", "1"));
    f.Pod(MakePod("p1").Node("node1").Priority(1000).Container("c").Obj());
    f.Pod(MakePod("big").Node("node2").Priority(1000).Container("c", {{"cpu", "1500m"}}).Obj());
    f.Pod(MakePod("p2").Node("node2").Container("c", {{"cpu", "100m"}}).Obj());
    f.Pod(MakePod("p3").Node("node3").Priority(1000).Container("c").Obj());
    PodExplanation e = f.Explain(MakePod("p").Priority(1000).Container("c", {{"cpu", "1"}}).Obj());
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_EQ(*e.summary,
              "0/3 nodes are available: 1 Insufficient cpu, 2 Too many pods. preemption: 0/3 "
              "nodes are available: 1 Insufficient cpu, 2 No preemption victims found for "
              "incoming pod.");
  }
  {
    // "2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource".
    Fixture f(false);
    for (const char* n : {"node1", "node2"}) {
      f.Node(SmallNode(n, "2"));
      f.Pod(MakePod(std::string("keep-") + n)
                .Node(n)
                .Priority(1000)
                .Container("c", {{"cpu", "1500m"}})
                .Obj());
      f.Pod(MakePod(std::string("low-") + n).Node(n).Container("c", {{"cpu", "100m"}}).Obj());
    }
    f.Node(SmallNode("node3", "500m")).Node(SmallNode("node4", "500m"));
    PodExplanation e = f.Explain(MakePod("p").Priority(1000).Container("c", {{"cpu", "1"}}).Obj());
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_EQ(*e.summary,
              "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: "
              "2 Insufficient cpu, 2 Preemption is not helpful for scheduling.");
  }
}

TEST(SchedulerTest, VictimsAreTheLeastImportantThatMustGo) {
  Fixture f;
  f.Node(SmallNode("n1", "4"));
  f.Pod(MakePod("system").Node("n1").Priority(1000).Container("c", {{"cpu", "1"}}).Obj());
  const char* starts[] = {"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"};
  for (int i = 0; i < 3; ++i) {
    admit::Pod p =
        Owned(MakePod("batch-" + std::to_string(i)).Node("n1").Container("c", {{"cpu", "1"}}).Obj(),
              "Job", "nightly");
    p.start_time = starts[i];
    f.Pod(p);
  }
  PodExplanation e = f.Explain(MakePod("web").Priority(500).Container("c", {{"cpu", "2"}}).Obj());
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary, "0/1 nodes are available: 1 Insufficient cpu.");
  ASSERT_EQ(e.preemption.nodes.size(), 1u);
  const PreemptionNode& n = e.preemption.nodes[0];
  EXPECT_TRUE(n.candidate);
  // batch-0 started first: the most important of equals, reprieved first.
  ASSERT_EQ(n.victims.size(), 2u);
  EXPECT_EQ(n.victims[0].pod, "default/batch-1");
  EXPECT_EQ(n.victims[1].pod, "default/batch-2");
  EXPECT_EQ(n.victims[0].owner, "Job default/nightly");
  EXPECT_EQ(e.preemption.nominated, "n1");
}

TEST(SchedulerTest, PreemptionPolicyNever) {
  Fixture f;
  f.Node(SmallNode("n1", "1"));
  f.Pod(MakePod("low").Node("n1").Container("c", {{"cpu", "1"}}).Obj());
  CandidatePod c;
  c.pod = MakePod("web").Priority(500).Container("c", {{"cpu", "1"}}).Obj();
  c.preemption_policy = "Never";
  PodExplanation e = f.Explain(c);
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary,
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: not eligible due to preemptionPolicy=Never.");
  EXPECT_FALSE(e.preemption.attempted);
}

TEST(SchedulerTest, PreFilterConflict) {
  for (bool dra : {false, true}) {
    Fixture f(dra);
    f.Node(SmallNode("a")).Node(SmallNode("b")).Node(SmallNode("c"));
    admit::Pod p = MakePod("web")
                       .Container("c")
                       .RequiredAffinityTerm({}, {Req("metadata.name", "In", {"a"}),
                                                  Req("metadata.name", "In", {"b"})})
                       .Obj();
    PodExplanation e = f.Explain(p);
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_EQ(e.pre_filter, "pod affinity terms conflict");
    EXPECT_EQ(e.not_considered, 3u);
    if (dra) {
      // DynamicResources' PreFilter never ran: its PostFilter reads no state and errors, which
      // ends PostFilter (derived from the code paths, see explain/README.md).
      EXPECT_EQ(*e.summary, "0/3 nodes are available: pod affinity terms conflict. not found");
    } else {
      EXPECT_EQ(*e.summary,
                "0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are "
                "available: 3 Preemption is not helpful for scheduling.");
    }
  }
}

TEST(SchedulerTest, NodeAffinityNamingAMissingNode) {
  Fixture f;
  f.Node(SmallNode("a")).Node(SmallNode("b"));
  PodExplanation e = f.Explain(MakePod("web")
                                   .Container("c")
                                   .RequiredAffinityTerm({}, {Req("metadata.name", "In", {"gone"})})
                                   .Obj());
  ASSERT_TRUE(e.summary.has_value());
  EXPECT_EQ(*e.summary,
            "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new "
            "claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not "
            "helpful for scheduling.");
}

TEST(SchedulerTest, FiltersNodegateDoesNotRunWithholdTheSummary) {
  Fixture f;
  f.Node(SmallNode("n1", "1"));
  CandidatePod c;
  c.pod = MakePod("web").Container("c", {{"cpu", "2"}}).Obj();
  c.not_evaluated = {
      "PodTopologySpread: spec.topologySpreadConstraints (whenUnsatisfiable: "
      "DoNotSchedule)"};
  PodExplanation e = f.Explain(c);
  EXPECT_FALSE(e.summary.has_value());
  EXPECT_NE(e.summary_withheld.find("does not evaluate"), std::string::npos);
  EXPECT_EQ(VerdictOn(e, "n1").plugin, "NodeResourcesFit");
}

TEST(SchedulerTest, ExistingPodsAntiAffinityThatMatchesWithholdsTheSummary) {
  Fixture f;
  f.Node(SmallNode("n1", "1"));
  admit::Pod holder = MakePod("cache-0").Node("n1").Container("c").Obj();
  kube::PodRecord record = kube::PodRecordOf(holder, Gates());
  record.required_anti_affinity =
      R"([{"labelSelector":{"matchLabels":{"app":"cache"}},"topologyKey":"kubernetes.io/hostname"}])";
  f.cluster().AddPod(std::move(record));
  PodExplanation other =
      f.Explain(MakePod("web").Label("app", "web").Container("c", {{"cpu", "2"}}).Obj());
  EXPECT_TRUE(other.summary.has_value());  // the term does not match this pod
  PodExplanation cache =
      f.Explain(MakePod("cache-1").Label("app", "cache").Container("c", {{"cpu", "2"}}).Obj());
  EXPECT_FALSE(cache.summary.has_value());
  ASSERT_EQ(cache.not_evaluated.size(), 1u);
  EXPECT_NE(cache.not_evaluated[0].find("default/cache-0"), std::string::npos);
}

TEST(SchedulerTest, NominatedPodsOfHigherPriorityHoldTheirRoom) {
  Fixture f;
  f.Node(SmallNode("n1", "4"));
  f.Unbound(json::parse(R"({"kind":"Pod","metadata":{"name":"vip","namespace":"default"},
      "spec":{"priority":1000,"containers":[{"name":"c","resources":{"requests":{"cpu":"3"}}}]},
      "status":{"phase":"Pending","nominatedNodeName":"n1"}})"));
  PodExplanation low = f.Explain(MakePod("web").Container("c", {{"cpu", "2"}}).Obj());
  EXPECT_EQ(low.fitting, 0u);
  PodExplanation high =
      f.Explain(MakePod("web").Priority(2000).Container("c", {{"cpu", "2"}}).Obj());
  EXPECT_EQ(high.fitting, 1u);  // a lower-priority nomination does not count against it
}

TEST(SchedulerTest, ABoundPodIsPlacedWithoutItself) {
  Fixture f;
  f.Node(SmallNode("n1"));
  admit::Pod web = MakePod("web").Node("n1").Phase("Running").Container("c").HostPort("//80").Obj();
  f.Pod(web);
  PodExplanation e = f.Explain(web);
  EXPECT_EQ(e.fitting, 1u);
  EXPECT_FALSE(e.notes.empty());
}

TEST(SchedulerTest, SchedulingGatesWithholdTheSummary) {
  Fixture f;
  f.Node(SmallNode("n1", "1"));
  CandidatePod c;
  c.pod = MakePod("web").Container("c", {{"cpu", "2"}}).Obj();
  c.scheduling_gates = {"example.com/quota"};
  PodExplanation e = f.Explain(c);
  EXPECT_FALSE(e.summary.has_value());
  EXPECT_NE(e.summary_withheld.find("example.com/quota"), std::string::npos);
}

TEST(SchedulerTest, DecodeCandidateFindsWhatNodegateDoesNotEvaluate) {
  auto c = DecodeCandidate(json::parse(R"({"kind":"Pod","metadata":{"name":"db-0"},
      "spec":{"schedulerName":"default-scheduler","preemptionPolicy":"Never",
        "schedulingGates":[{"name":"g"}],
        "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"ScheduleAnyway"}],
        "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-db-0"}},{"name":"cfg","configMap":{"name":"x"}}],
        "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu"}],
        "containers":[{"name":"c"}]},
      "status":{"nominatedNodeName":"n2"}})"),
                           "db-0");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->preemption_policy, "Never");
  EXPECT_EQ(c->nominated_node, "n2");
  EXPECT_EQ(c->scheduling_gates, std::vector<std::string>{"g"});
  ASSERT_EQ(c->not_evaluated.size(), 2u);  // ScheduleAnyway only scores; configMap is nothing
  EXPECT_NE(c->not_evaluated[0].find("data"), std::string::npos);
  EXPECT_EQ(c->not_evaluated[1], "DynamicResources: spec.resourceClaims");
  EXPECT_FALSE(
      DecodeCandidate(json::parse(R"({"kind":"Service","metadata":{"name":"x"}})"), "f").ok());
  EXPECT_FALSE(
      DecodeCandidate(json::parse(R"({"kind":"Pod","metadata":{"name":"x"},"spec":{}})"), "f")
          .ok());
}

TEST(SchedulerTest, LabelSelectors) {
  const std::map<std::string, std::string> labels = {{"app", "web"}, {"tier", "front"}};
  EXPECT_TRUE(LabelSelectorMatches(json::object(), labels));
  EXPECT_FALSE(LabelSelectorMatches(json(), labels));
  EXPECT_TRUE(LabelSelectorMatches(json::parse(R"({"matchLabels":{"app":"web"}})"), labels));
  EXPECT_FALSE(LabelSelectorMatches(json::parse(R"({"matchLabels":{"app":"db"}})"), labels));
  EXPECT_TRUE(LabelSelectorMatches(
      json::parse(R"({"matchExpressions":[{"key":"tier","operator":"In","values":["front"]},
                                          {"key":"x","operator":"DoesNotExist"}]})"),
      labels));
  EXPECT_FALSE(LabelSelectorMatches(
      json::parse(R"({"matchExpressions":[{"key":"tier","operator":"NotIn","values":["front"]}]})"),
      labels));
  EXPECT_FALSE(LabelSelectorMatches(
      json::parse(R"({"matchExpressions":[{"key":"tier","operator":"Bogus"}]})"), labels));
}

}  // namespace
}  // namespace nodegate::explain
