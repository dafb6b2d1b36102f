#include "admit/kubelet/kubelet_admission.h"

#include <gtest/gtest.h>

#include "admit/check/pod_facts.h"
#include "admit/testing/builders.h"

namespace nodegate::admit::kubelet {
namespace {

using testing::MakeNode;
using testing::MakePod;

struct Case {
  std::string name;
  Pod pod;
  Node node;
  std::vector<Pod> existing;
  std::string want_reason;  // "" = admitted
  std::string want_message;
  std::vector<std::string> want_plugins = {};  // every failure, in order (when given)
};

KubeletVerdict Run(const Pod& pod, const Node& node_object, const std::vector<Pod>& existing,
                   const KubeletOptions& options = {}) {
  NodeInfo node(PrepareNode(node_object, options.host_os));
  for (const Pod& e : existing) {
    node.AddPod(MakePodFacts(e, options.gates, true));
  }
  return Admit(pod, node, options);
}

void RunCases(const std::vector<Case>& cases, const KubeletOptions& options = {}) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    KubeletVerdict v = Run(c.pod, c.node, c.existing, options);
    EXPECT_EQ(v.admitted, c.want_reason.empty());
    EXPECT_EQ(v.reason, c.want_reason);
    EXPECT_EQ(v.message, c.want_message);
    if (!c.want_plugins.empty()) {
      std::vector<std::string> plugins;
      for (const KubeletFailure& f : v.failures) {
        plugins.push_back(f.plugin);
      }
      EXPECT_EQ(plugins, c.want_plugins);
    }
  }
}

Node MachineNode() {
  return MakeNode("machine1")
      .Allocatable({{"cpu", "10m"}, {"memory", "20"}, {"pods", "32"}, {"example.com/gpu", "1"}})
      .Obj();
}

// Cases from pkg/kubelet/lifecycle/predicate_test.go TestGeneralPredicates.
TEST(KubeletAdmitTest, GeneralPredicates) {
  const std::vector<Case> cases = {
      {"no resources/port/host requested always fits",
       MakePod().Container("c").Obj(),
       MachineNode(),
       {MakePod("e").Container("c", {{"cpu", "9m"}, {"memory", "19"}}).Obj()},
       "",
       ""},
      {"not enough cpu and memory resource",
       MakePod().Node("machine1").Container("c", {{"cpu", "8m"}, {"memory", "10"}}).Obj(),
       MachineNode(),
       {MakePod("e").Container("c", {{"cpu", "5m"}, {"memory", "19"}}).Obj()},
       "OutOfcpu",
       "Node didn't have enough resource: cpu, requested: 8, used: 5, capacity: 10",
       {"NodeResourcesFit", "NodeResourcesFit"}},
      {"not enough GPU resource",
       MakePod().Container("c", {{"example.com/gpu", "2"}}).Obj(),
       MachineNode(),
       {},
       "OutOfexample.com/gpu",
       "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"},
      {"enough GPU resource",
       MakePod().Container("c", {{"example.com/gpu", "1"}}).Obj(),
       MachineNode(),
       {},
       "",
       ""},
      {"host not match",
       MakePod().Node("machine2").Obj(),
       MachineNode(),
       {},
       "NodeName",
       "Predicate NodeName failed: node(s) didn't match the requested node name"},
      {"hostport conflict",
       MakePod().Container("c").HostPort("TCP/127.0.0.1/80").Obj(),
       MachineNode(),
       {MakePod("e").Container("c").HostPort("TCP/127.0.0.1/80").Obj()},
       "NodePorts",
       "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
      {"too many pods",
       MakePod().Obj(),
       MakeNode("machine1").Allocatable({{"pods", "1"}}).Obj(),
       {MakePod("e").Obj()},
       "OutOfpods",
       "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"},
      {"node affinity mismatch",
       MakePod().NodeSelector("disk", "ssd").Obj(),
       MachineNode(),
       {},
       "NodeAffinity",
       "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
      {"the first failure is the reason, all are kept (resources, affinity, name, ports)",
       MakePod()
           .Node("machine2")
           .NodeSelector("disk", "ssd")
           .Container("c", {{"cpu", "1"}})
           .HostPort("TCP//80")
           .Obj(),
       MachineNode(),
       {MakePod("e").Container("c").HostPort("TCP//80").Obj()},
       "OutOfcpu",
       "Node didn't have enough resource: cpu, requested: 1000, used: 0, capacity: 10",
       {"NodeResourcesFit", "NodeAffinity", "NodeName", "NodePorts"}},
  };
  RunCases(cases);
}

// The kubelet checks NoExecute taints only, and not for static pods.
TEST(KubeletAdmitTest, Taints) {
  const Node no_execute =
      MakeNode("n").Allocatable({{"pods", "10"}}).Taint("k", "v", "NoExecute").Obj();
  const Node no_schedule = MakeNode("n")
                               .Allocatable({{"pods", "10"}})
                               .Taint("k", "v", "NoSchedule")
                               .Unschedulable()
                               .Obj();
  const std::vector<Case> cases = {
      {"NoExecute taint not tolerated",
       MakePod().Obj(),
       no_execute,
       {},
       "TaintToleration",
       "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
      {"NoExecute taint tolerated",
       MakePod().Toleration("k", "Equal", "v", "NoExecute").Obj(),
       no_execute,
       {},
       "",
       ""},
      {"static pods are exempt from the taint check",
       MakePod().Static().Obj(),
       no_execute,
       {},
       "",
       ""},
      {"config.source api is not a static pod",
       MakePod().Annotation("kubernetes.io/config.source", "api").Obj(),
       no_execute,
       {},
       "TaintToleration",
       "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
      {"NoSchedule taints and cordon are not the kubelet's business",
       MakePod().Obj(),
       no_schedule,
       {},
       "",
       ""},
  };
  RunCases(cases);
}

// Cases from predicate_test.go TestRejectPodAdmissionBasedOnOSSelector / OSField.
TEST(KubeletAdmitTest, OperatingSystem) {
  const Node node =
      MakeNode("n").Allocatable({{"pods", "10"}}).Label("kubernetes.io/os", "linux").Obj();
  const std::vector<Case> cases = {
      {"OS label match", MakePod().Label("kubernetes.io/os", "linux").Obj(), node, {}, "", ""},
      {"dummyOS label, but the underlying OS matches",
       MakePod().Label("kubernetes.io/os", "linux").Obj(),
       MakeNode("n").Allocatable({{"pods", "10"}}).Label("kubernetes.io/os", "dummyOS").Obj(),
       {},
       "",
       ""},
      {"OS not matching",
       MakePod().Label("kubernetes.io/os", "windows").Obj(),
       node,
       {},
       "PodOSSelectorNodeLabelDoesNotMatch",
       "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
      {"a nodeSelector on kubernetes.io/os is node affinity, matched against the kubelet's OS",
       MakePod().NodeSelector("kubernetes.io/os", "linux").Obj(),
       MakeNode("n").Allocatable({{"pods", "10"}}).Obj(),
       {},
       "",
       ""},
      {"OS field match", MakePod().Os("linux").Obj(), node, {}, "", ""},
      {"OS field mismatch",
       MakePod().Os("windows").Obj(),
       node,
       {},
       "PodOSNotSupported",
       "Failed to admit pod as the OS field doesn't match node OS"},
      {"no OS field", MakePod().Obj(), node, {}, "", ""},
  };
  RunCases(cases);
}

TEST(KubeletAdmitTest, SupplementalGroupsPolicy) {
  const Node unsupported = MakeNode("n").Allocatable({{"pods", "10"}}).Obj();
  const Node supported =
      MakeNode("n").Allocatable({{"pods", "10"}}).SupplementalGroupsPolicySupported(true).Obj();
  const std::vector<Case> cases = {
      {"Strict on a node without support",
       MakePod().SupplementalGroupsPolicy("Strict").Obj(),
       unsupported,
       {},
       "SupplementalGroupsPolicyNotSupported",
       "SupplementalGroupsPolicy=Strict is not supported in this node"},
      {"Strict on a node with support",
       MakePod().SupplementalGroupsPolicy("Strict").Obj(),
       supported,
       {},
       "",
       ""},
      {"Merge never rejects",
       MakePod().SupplementalGroupsPolicy("Merge").Obj(),
       unsupported,
       {},
       "",
       ""},
      {"unset never rejects", MakePod().Obj(), unsupported, {}, "", ""},
  };
  RunCases(cases);
  KubeletOptions off;
  off.gates.Set(kGateSupplementalGroupsPolicy, false);
  RunCases({{"gate off: no check",
             MakePod().SupplementalGroupsPolicy("Strict").Obj(),
             unsupported,
             {},
             "",
             ""}},
           off);
}

// Cases from predicate_test.go TestRemoveMissingExtendedResources.
TEST(KubeletAdmitTest, RemoveMissingExtendedResources) {
  const Node node =
      MakeNode("n").Allocatable({{"example.com/known", "1"}, {"example.com/zero", "0"}}).Obj();
  const Pod pod = MakePod()
                      .InitContainer("init", {{"example.com/unknown", "1"}})
                      .Container("c", {{"example.com/unknown", "2"},
                                       {"example.com/known", "1"},
                                       {"example.com/zero", "1"},
                                       {"hugepages-2Mi", "2Mi"},
                                       {"kubernetes.io/x", "1"},
                                       {"cpu", "1"}})
                      .Obj();
  const Pod out = RemoveMissingExtendedResources(pod, node);
  EXPECT_EQ(out.init_containers[0].requests.count("example.com/unknown"), 0u);
  const ResourceList& r = out.containers[0].requests;
  EXPECT_EQ(r.count("example.com/unknown"), 0u)
      << "requires extended resource not in node allocatable";
  EXPECT_EQ(r.count("example.com/known"), 1u)
      << "requires extended resource that is in node allocatable";
  EXPECT_EQ(r.count("example.com/zero"), 1u) << "a zero entry is kept (and then fails)";
  EXPECT_EQ(r.count("hugepages-2Mi"), 1u) << "hugepages are never dropped";
  EXPECT_EQ(r.count("kubernetes.io/x"), 1u) << "requires non-extended resource";
  EXPECT_EQ(r.count("cpu"), 1u);
}

TEST(KubeletAdmitTest, UnknownExtendedResourcesAreAdmittedKnownZeroOnesAreNot) {
  const Node node = MakeNode("n").Allocatable({{"pods", "10"}, {"example.com/zero", "0"}}).Obj();
  RunCases({{"cluster-level resource unknown to the node",
             MakePod().Container("c", {{"example.com/license", "1"}}).Obj(),
             node,
             {},
             "",
             ""},
            {"resource the node lists with 0",
             MakePod().Container("c", {{"example.com/zero", "1"}}).Obj(),
             node,
             {},
             "OutOfexample.com/zero",
             "Node didn't have enough resource: example.com/zero, requested: 1, used: 0, "
             "capacity: 0"}});
}

// AdmitOn: Run, under a name a TEST body does not hide.
KubeletVerdict AdmitOn(const Pod& pod, const Node& node, const std::vector<Pod>& existing) {
  return Run(pod, node, existing);
}

// Step 7, the critical-pod admission handler, on a full node: 1000m and 3 pods allowed.
struct PreemptionCase {
  std::string name;
  Pod pod;
  std::vector<Pod> existing;
  std::string want_reason;  // "" = admitted
  std::string want_message;
  std::vector<std::string> want_evicted = {};  // in the kubelet's order
};

TEST(KubeletAdmitTest, CriticalPodsEvictToGetIn) {
  const Node node = MakeNode("n").Allocatable({{"cpu", "1000m"}, {"pods", "3"}}).Obj();
  const Pod best_effort = MakePod("be").Container("c").Obj();
  const Pod burstable = MakePod("web").Container("c", {{"cpu", "600m"}}).Obj();
  const Pod guaranteed =
      MakePod("db").Container("c").Limits({{"cpu", "300m"}, {"memory", "1Gi"}}).Obj();
  const std::vector<Pod> full = {best_effort, burstable, guaranteed};
  const std::string too_few =
      "Unexpected error while attempting to recover from admission failure: preemption: error "
      "finding a set of pods to preempt: no set of running pods found to reclaim resources: ";
  const std::vector<PreemptionCase> cases = {
      {"a static pod short of cpu and of a pod slot evicts the Burstable pod, which frees both",
       MakePod("apiserver").Static().Container("c", {{"cpu", "500m"}}).Obj(),
       full,
       "",
       "",
       {"default/web"}},
      {"the same pod, not critical, is rejected for its first failure",
       MakePod("apiserver").Container("c", {{"cpu", "500m"}}).Obj(), full, "OutOfpods",
       "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
      {"critical by priority; a pod slot alone takes the last BestEffort pod",
       MakePod("dns").Priority(2000001000).Container("c").Obj(),
       {burstable, MakePod("be1").Container("c").Obj(), MakePod("be2").Container("c").Obj()},
       "",
       "",
       {"default/be2"}},
      {"a mirror pod is critical",
       MakePod("etcd").Mirror().Container("c", {{"cpu", "500m"}}).Obj(),
       full,
       "",
       "",
       {"default/web"}},
      {"Guaranteed pods go only when the others cannot free enough",
       MakePod("apiserver").Static().Container("c", {{"cpu", "900m"}}).Obj(),
       {best_effort, burstable, guaranteed},
       "",
       "",
       {"default/web", "default/db"}},
      {"critical pods are never evicted: the kubelet's UnexpectedAdmissionError",
       MakePod("apiserver").Static().Container("c", {{"cpu", "500m"}}).Obj(),
       {MakePod("etcd").Static().Container("c", {{"cpu", "900m"}}).Obj()},
       "UnexpectedAdmissionError",
       too_few + "[(res: cpu, q: 400), ]"},
      {"a critical pod short of a host port as well is rejected for the port",
       MakePod("apiserver").Static().Container("c", {{"cpu", "500m"}}).HostPort("TCP//6443").Obj(),
       {MakePod("proxy").Container("c", {{"cpu", "600m"}}).HostPort("TCP//6443").Obj()},
       "NodePorts",
       "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
  };
  for (const PreemptionCase& c : cases) {
    SCOPED_TRACE(c.name);
    KubeletVerdict v = AdmitOn(c.pod, node, c.existing);
    EXPECT_EQ(v.admitted, c.want_reason.empty());
    EXPECT_EQ(v.reason, c.want_reason);
    EXPECT_EQ(v.message, c.want_message);
    std::vector<std::string> evicted;
    for (const Eviction& e : v.evictions) {
      evicted.push_back(e.pod);
    }
    EXPECT_EQ(evicted, c.want_evicted);
    EXPECT_EQ(v.admitted && !c.want_evicted.empty(), !v.shortfall.empty());
  }
}

TEST(KubeletAdmitTest, EvictionsSayWhatEachPodFrees) {
  const Node node =
      MakeNode("n").Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}).Obj();
  const Pod batch = MakePod("batch").Namespace("jobs").Container("c").Obj();
  const Pod cache =
      MakePod("cache").Namespace("web").Container("c", {{"cpu", "1500m"}, {"memory", "2Gi"}}).Obj();
  const Pod apiserver = MakePod("kube-apiserver")
                            .Static()
                            .Container("c", {{"cpu", "1500m"}, {"memory", "2Gi"}})
                            .Obj();
  const Pod guaranteed =
      MakePod("x").Container("c").Limits({{"cpu", "500m"}, {"memory", "2Gi"}}).Obj();
  KubeletVerdict v = AdmitOn(apiserver, node, {batch, cache, guaranteed});
  ASSERT_TRUE(v.admitted) << v.message;
  EXPECT_EQ(v.critical, "static pod");
  EXPECT_TRUE(v.failures.empty());
  EXPECT_EQ(v.shortfall, (AdmissionRequirements{{"cpu", 1500}, {"memory", 2048ll << 20}}));
  ASSERT_EQ(v.evictions.size(), 1u);
  EXPECT_EQ(v.evictions[0].pod, "web/cache");
  EXPECT_EQ(v.evictions[0].qos, QosClass::kBurstable);
  EXPECT_EQ(v.evictions[0].frees, (std::vector<std::pair<std::string, int64_t>>{
                                      {"cpu", 1500}, {"memory", 2048ll << 20}}));
}

}  // namespace
}  // namespace nodegate::admit::kubelet
