#include "admit/kubelet/preemption.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "admit/check/pod_facts.h"
#include "admit/testing/builders.h"

namespace nodegate::admit::kubelet {
namespace {

using testing::MakePod;

constexpr int64_t kMi = 1 << 20;

// The pods of pkg/kubelet/preemption/preemption_test.go getTestPods, by the same names.
std::map<std::string, Pod> TestPods() {
  const testing::ResourcePairs small = {{"cpu", "100m"}, {"memory", "100Mi"}};
  const testing::ResourcePairs high = {{"cpu", "300m"}, {"memory", "300Mi"}};
  std::map<std::string, Pod> pods;
  pods["tiny"] = MakePod("tiny").Container("c", {{"cpu", "1m"}, {"memory", "1Mi"}}).Obj();
  pods["bestEffort"] = MakePod("bestEffort").Container("c").Obj();
  pods["cluster-critical"] = MakePod("cluster-critical")
                                 .Namespace("kube-system")
                                 .PriorityClassName("system-cluster-critical")
                                 .Priority(kSystemCriticalPriority)
                                 .Container("c", small)
                                 .Obj();
  // The upstream test gives node-critical SystemCriticalPriority + 100.
  pods["node-critical"] = MakePod("node-critical")
                              .Namespace("kube-system")
                              .PriorityClassName("system-node-critical")
                              .Priority(kSystemCriticalPriority + 100)
                              .Container("c", small)
                              .Obj();
  pods["burstable"] = MakePod("burstable").Container("c", small).Obj();
  pods["guaranteed"] = MakePod("guaranteed").Container("c", small).Limits(small).Obj();
  pods["high-request-burstable"] = MakePod("high-request-burstable").Container("c", high).Obj();
  pods["high-request-guaranteed"] =
      MakePod("high-request-guaranteed").Container("c", high).Limits(high).Obj();
  return pods;
}

// Requirements: getAdmissionRequirementList (cpu in millicores, memory in Mi, pods).
AdmissionRequirements Requirements(int64_t cpu, int64_t memory_mi, int64_t pods) {
  AdmissionRequirements out;
  if (cpu > 0) {
    out.push_back({"cpu", cpu});
  }
  if (memory_mi > 0) {
    out.push_back({"memory", memory_mi * kMi});
  }
  if (pods > 0) {
    out.push_back({"pods", pods});
  }
  return out;
}

Preemptee PreempteeOf(const Pod& pod, const AdmissionRequirements& /*requirements*/) {
  return Preemptee{MakePodFacts(pod, FeatureGates(), /*already_on_node=*/true)};
}

// NameOf: the NAME of a preemptee's NAMESPACE/NAME.
std::string NameOf(const Preemptee& p) { return p.pod->key.substr(p.pod->key.find('/') + 1); }

struct PreemptCase {
  std::string name;
  std::string preemptor;
  std::vector<std::string> pods;
  AdmissionRequirements requirements;
  bool want_error;
  std::vector<std::string> want;  // compared as a multiset, as podListEqual does
};

void RunPreemptCases(const std::vector<PreemptCase>& cases) {
  const std::map<std::string, Pod> all = TestPods();
  for (const PreemptCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Preemptee> pods;
    for (const std::string& name : c.pods) {
      pods.push_back(PreempteeOf(all.at(name), c.requirements));
    }
    auto got = PodsToPreempt(all.at(c.preemptor), pods, c.requirements);
    ASSERT_EQ(!got.ok(), c.want_error) << (got.ok() ? "no error" : got.error().msg);
    if (!got.ok()) {
      continue;
    }
    std::vector<std::string> names;
    for (const Preemptee& p : *got) {
      names.push_back(NameOf(p));
    }
    std::vector<std::string> want = c.want;
    std::sort(names.begin(), names.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(names, want);
  }
}

// TestEvictPodsToFreeRequests (the victims evictPodsToFreeRequests would kill).
TEST(PreemptionTest, EvictPodsToFreeRequests) {
  RunPreemptCases({
      {"critical pods cannot be preempted",
       "cluster-critical",
       {"cluster-critical"},
       Requirements(0, 0, 1),
       true,
       {}},
      {"best effort pods are not preempted when attempting to free resources",
       "cluster-critical",
       {"bestEffort"},
       Requirements(0, 1, 0),
       true,
       {}},
      {"multiple pods evicted",
       "cluster-critical",
       {"cluster-critical", "bestEffort", "burstable", "high-request-burstable", "guaranteed",
        "high-request-guaranteed"},
       Requirements(0, 550, 0),
       false,
       {"high-request-burstable", "high-request-guaranteed"}},
  });
}

// TestGetPodsToPreempt.
TEST(PreemptionTest, GetPodsToPreempt) {
  const std::vector<std::string> five = {"bestEffort", "burstable", "high-request-burstable",
                                         "guaranteed", "high-request-guaranteed"};
  RunPreemptCases({
      {"no requirements", "cluster-critical", {}, Requirements(0, 0, 0), false, {}},
      {"no pods", "cluster-critical", {}, Requirements(0, 0, 1), true, {}},
      {"equal pods and resources requirements",
       "cluster-critical",
       {"burstable"},
       Requirements(100, 100, 1),
       false,
       {"burstable"}},
      {"higher requirements than pod requests",
       "cluster-critical",
       {"burstable"},
       Requirements(200, 200, 2),
       true,
       {}},
      {"choose between bestEffort and burstable",
       "cluster-critical",
       {"burstable", "bestEffort"},
       Requirements(0, 0, 1),
       false,
       {"bestEffort"}},
      {"choose between burstable and guaranteed",
       "cluster-critical",
       {"burstable", "guaranteed"},
       Requirements(0, 0, 1),
       false,
       {"burstable"}},
      {"choose lower request burstable if it meets requirements",
       "cluster-critical",
       {"bestEffort", "high-request-burstable", "burstable"},
       Requirements(100, 100, 0),
       false,
       {"burstable"}},
      {"choose higher request burstable if lower does not meet requirements",
       "cluster-critical",
       {"bestEffort", "burstable", "high-request-burstable"},
       Requirements(150, 150, 0),
       false,
       {"high-request-burstable"}},
      {"multiple pods required",
       "cluster-critical",
       five,
       Requirements(350, 350, 0),
       false,
       {"burstable", "high-request-burstable"}},
      {"evict guaranteed when we have to, and dont evict the extra burstable",
       "cluster-critical",
       five,
       Requirements(0, 550, 0),
       false,
       {"high-request-burstable", "high-request-guaranteed"}},
      {"evict cluster critical pod for node critical pod",
       "node-critical",
       {"cluster-critical"},
       Requirements(100, 0, 0),
       false,
       {"cluster-critical"}},
      {"can not evict node critical pod for cluster critical pod",
       "cluster-critical",
       {"node-critical"},
       Requirements(100, 0, 0),
       true,
       {}},
  });
}

// BenchmarkGetPodsToPreempt's input (110 tiny burstable pods of 1m each, 110m wanted), with a
// critical preemptor: every one of them goes.
TEST(PreemptionTest, ManyTinyPodsAllGo) {
  const Pod tiny = TestPods().at("tiny");
  const AdmissionRequirements requirements = {{"cpu", 110}};
  std::vector<Preemptee> pods(110, PreempteeOf(tiny, requirements));
  auto got = PodsToPreempt(TestPods().at("cluster-critical"), pods, requirements);
  ASSERT_TRUE(got.ok()) << got.error().msg;
  EXPECT_EQ(got->size(), 110u);
}

// TestAdmissionRequirementsDistance.
TEST(PreemptionTest, AdmissionRequirementsDistance) {
  struct Case {
    std::string name;
    AdmissionRequirements requirements;
    std::string pod;
    double want;
  };
  const std::vector<Case> cases = {
      {"no requirements", Requirements(0, 0, 0), "burstable", 0},
      {"no requests, some requirements", Requirements(100, 100, 1), "bestEffort", 2},
      {"equal requests and requirements", Requirements(100, 100, 1), "burstable", 0},
      {"higher requests than requirements", Requirements(50, 50, 0), "burstable", 0},
  };
  const std::map<std::string, Pod> all = TestPods();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Distance(c.requirements, PreempteeOf(all.at(c.pod), c.requirements)), c.want);
  }
}

// TestAdmissionRequirementsSubtract.
TEST(PreemptionTest, AdmissionRequirementsSubtract) {
  struct Case {
    std::string name;
    AdmissionRequirements initial;
    std::string pod;
    AdmissionRequirements want;
  };
  const std::vector<Case> cases = {
      {"subtract a pod from no requirements", Requirements(0, 0, 0), "burstable",
       Requirements(0, 0, 0)},
      {"subtract no requests from some requirements", Requirements(100, 100, 1), "bestEffort",
       Requirements(100, 100, 0)},
      {"equal requests and requirements", Requirements(100, 100, 1), "burstable",
       Requirements(0, 0, 0)},
      {"subtract higher requests than requirements", Requirements(50, 50, 0), "burstable",
       Requirements(0, 0, 0)},
      {"subtract lower requests than requirements", Requirements(200, 200, 1), "burstable",
       Requirements(100, 100, 0)},
  };
  const std::map<std::string, Pod> all = TestPods();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Subtract(c.initial, {PreempteeOf(all.at(c.pod), c.initial)}), c.want);
  }
}

// The victims come BestEffort first, then Burstable, then Guaranteed (the kubelet's append
// order); within a class in the order they were picked.
TEST(PreemptionTest, VictimsInTheKubeletsOrder) {
  const std::map<std::string, Pod> all = TestPods();
  const AdmissionRequirements requirements = Requirements(400, 0, 1);
  std::vector<Preemptee> pods;
  for (const char* name : {"high-request-guaranteed", "burstable", "bestEffort"}) {
    pods.push_back(PreempteeOf(all.at(name), requirements));
  }
  auto got = PodsToPreempt(all.at("cluster-critical"), pods, requirements);
  ASSERT_TRUE(got.ok()) << got.error().msg;
  std::vector<std::string> names;
  for (const Preemptee& p : *got) {
    names.push_back(NameOf(p));
  }
  // All BestEffort and Burstable pods free 100m: the Guaranteed one is needed for the other
  // 300m; then the Burstable one, which also covers the pod; no BestEffort pod is left to take.
  EXPECT_EQ(names, (std::vector<std::string>{"burstable", "high-request-guaranteed"}));
}

// Equal distance and equal requests: the later pod in the list wins the tie.
TEST(PreemptionTest, TiesGoToTheLaterPod) {
  const AdmissionRequirements requirements = Requirements(100, 0, 0);
  const Pod a = MakePod("a").Container("c", {{"cpu", "100m"}, {"memory", "1Mi"}}).Obj();
  const Pod b = MakePod("b").Container("c", {{"cpu", "100m"}, {"memory", "1Mi"}}).Obj();
  const Pod c = MakePod("c").Container("c", {{"cpu", "100m"}, {"memory", "2Mi"}}).Obj();
  auto got = PodsToPreempt(
      TestPods().at("cluster-critical"),
      {PreempteeOf(a, requirements), PreempteeOf(b, requirements), PreempteeOf(c, requirements)},
      requirements);
  ASSERT_TRUE(got.ok()) << got.error().msg;
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(NameOf(got->front()), "b");  // c asks for more memory; b comes after a
}

TEST(PreemptionTest, CriticalReason) {
  struct Case {
    std::string name;
    Pod pod;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"static pod from a file", MakePod().Static().Obj(), "static pod"},
      {"static pod from a URL", MakePod().Annotation("kubernetes.io/config.source", "http").Obj(),
       "static pod"},
      {"config.source api is not static",
       MakePod().Annotation("kubernetes.io/config.source", "api").Obj(), ""},
      {"mirror pod", MakePod().Mirror().Obj(), "mirror pod"},
      {"system-cluster-critical priority", MakePod().Priority(2000000000).Obj(),
       "priority 2000000000"},
      {"one below", MakePod().Priority(1999999999).Obj(), ""},
      {"a class name without a resolved priority",
       MakePod().PriorityClassName("system-node-critical").Obj(), ""},
      {"plain pod", MakePod().Obj(), ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(CriticalReason(c.pod), c.want);
    EXPECT_EQ(IsCriticalPod(c.pod), !c.want.empty());
  }
}

TEST(PreemptionTest, Preemptable) {
  struct Case {
    std::string name;
    Pod preemptor;
    Pod preemptee;
    bool want;
  };
  const std::vector<Case> cases = {
      {"critical over non-critical", MakePod().Static().Obj(), MakePod().Obj(), true},
      {"critical over non-critical with a higher priority", MakePod().Static().Obj(),
       MakePod().Priority(1000000).Obj(), true},
      {"static over static: no priorities to compare", MakePod().Static().Obj(),
       MakePod().Static().Obj(), false},
      {"higher priority over critical", MakePod().Priority(2000001000).Obj(),
       MakePod().Priority(2000000000).Obj(), true},
      {"equal priorities", MakePod().Priority(2000000000).Obj(),
       MakePod().Priority(2000000000).Obj(), false},
      {"static preemptor has no priority for a critical preemptee", MakePod().Static().Obj(),
       MakePod().Priority(2000000000).Obj(), false},
      {"non-critical over lower priority", MakePod().Priority(100).Obj(),
       MakePod().Priority(1).Obj(), true},
      {"non-critical without priorities", MakePod().Obj(), MakePod().Obj(), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Preemptable(c.preemptor, *MakePodFacts(c.preemptee, FeatureGates(), true)), c.want);
  }
}

// GetResourceRequest: what a victim is counted as freeing.
TEST(PreemptionTest, ResourceRequest) {
  struct Case {
    std::string name;
    Pod pod;
    std::string resource;
    int64_t want;
    std::string gates = "";
  };
  const std::vector<Case> cases = {
      {"every pod frees one pod", MakePod().Obj(), "pods", 1},
      {"containers summed, cpu in millicores",
       MakePod().Container("a", {{"cpu", "250m"}}).Container("b", {{"cpu", "1"}}).Obj(), "cpu",
       1250},
      {"init containers as a peak",
       MakePod().InitContainer("i", {{"memory", "2Gi"}}).Container("a", {{"memory", "1Gi"}}).Obj(),
       "memory", 2 * 1024 * kMi},
      {"sidecars add to the app containers",
       MakePod().SidecarContainer("s", {{"cpu", "100m"}}).Container("a", {{"cpu", "200m"}}).Obj(),
       "cpu", 300},
      {"overhead added to a non-zero request",
       MakePod().Container("a", {{"cpu", "100m"}}).Overhead({{"cpu", "50m"}}).Obj(), "cpu", 150},
      {"no overhead on a zero request",
       MakePod().Container("a", {{"memory", "1Mi"}}).Overhead({{"cpu", "50m"}}).Obj(), "cpu", 0},
      {"pod-level requests replace the containers'",
       MakePod().Container("a", {{"cpu", "100m"}}).PodRequests({{"cpu", "2"}}).Obj(), "cpu", 2000},
      {"pod-level resources drop the containers' other requests",
       MakePod().Container("a", {{"ephemeral-storage", "1Gi"}}).PodRequests({{"cpu", "2"}}).Obj(),
       "ephemeral-storage", 0},
      {"gate off: containers counted, pod-level cpu still on top",
       MakePod()
           .Container("a", {{"ephemeral-storage", "1Gi"}, {"cpu", "100m"}})
           .PodRequests({{"cpu", "2"}})
           .Obj(),
       "ephemeral-storage", 1024 * kMi, "PodLevelResources=false"},
      {"extended resources in units", MakePod().Container("a", {{"example.com/gpu", "2"}}).Obj(),
       "example.com/gpu", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto gates = FeatureGates::Parse(c.gates);
    ASSERT_TRUE(gates.ok());
    EXPECT_EQ(ResourceRequest(c.pod, c.resource, *gates), c.want);
  }
}

TEST(PreemptionTest, RequirementsFromInsufficientResources) {
  EXPECT_EQ(RequirementFor({"cpu", 1500, 900, 1900}), (AdmissionRequirement{"cpu", 500}));
  EXPECT_EQ(RequirementFor({"pods", 1, 110, 110}), (AdmissionRequirement{"pods", 1}));
  EXPECT_EQ(RequirementsToString({{"cpu", 500}, {"memory", 1024}}),
            "[(res: cpu, q: 500), (res: memory, q: 1024), ]");
  EXPECT_EQ(RequirementsToString({}), "[]");
}

}  // namespace
}  // namespace nodegate::admit::kubelet
