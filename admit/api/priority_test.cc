#include "admit/api/priority.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "lib/base/result.h"

namespace nodegate::admit {
namespace {

using testing::MakePod;

Result<PriorityClasses> FromYaml(const std::string& text) {
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, "classes.yaml"));
  return PriorityClasses::FromDocuments(docs);
}

constexpr const char* kClasses = R"(apiVersion: v1
kind: List
items:
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: system-node-critical}, value: 2000001000}
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: batch}, value: 100, globalDefault: true}
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: batch-low}, value: 50, globalDefault: true}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: business-critical}
value: 1000000000
)";

TEST(PriorityClassesTest, ReadsEveryFormAndKnowsTheBuiltIns) {
  auto classes = FromYaml(kClasses);
  ASSERT_TRUE(classes.ok()) << classes.error().msg;
  EXPECT_TRUE(classes->complete());
  ASSERT_NE(classes->Find("business-critical"), nullptr);
  EXPECT_EQ(classes->Find("business-critical")->value, 1000000000);
  ASSERT_NE(classes->Find("system-cluster-critical"), nullptr) << "known without the file";
  EXPECT_EQ(classes->Find("system-cluster-critical")->value, 2000000000);
  ASSERT_NE(classes->GlobalDefault(), nullptr);
  EXPECT_EQ(classes->GlobalDefault()->name, "batch-low") << "the lowest of two defaults";
  const PriorityClasses built_in = PriorityClasses::BuiltIn();
  EXPECT_FALSE(built_in.complete());
  EXPECT_EQ(built_in.Find("system-node-critical")->value, 2000001000);
  EXPECT_EQ(built_in.GlobalDefault(), nullptr);
}

TEST(PriorityClassesTest, RefusesWhatTheApiServerRefuses) {
  const std::string head = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n";
  struct Case {
    std::string name;
    std::string text;
    std::string want;  // the error message
  };
  const std::vector<Case> cases = {
      {"above the user-definable maximum", head + "metadata: {name: x}\nvalue: 1000000001\n",
       "classes.yaml: value: maximum allowed value of a user defined priority is 1000000000, got "
       "1000000001"},
      {"a reserved name", head + "metadata: {name: system-mine}\nvalue: 1\n",
       "classes.yaml: metadata.name: priority class names with 'system-' prefix are reserved for "
       "system use only, got \"system-mine\""},
      {"a built-in name with another value",
       head + "metadata: {name: system-node-critical}\nvalue: 5\n",
       "classes.yaml: value: system-node-critical has value 2000001000, got 5"},
      {"no value", head + "metadata: {name: x}\n",
       "classes.yaml: value: required, an integer between -2147483648 and 2147483647"},
      {"no name", head + "value: 1\n", "classes.yaml: metadata.name: required"},
      {"another kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
       "classes.yaml: kind: expected PriorityClass, PriorityClassList or List, got \"Pod\""},
      {"a class twice",
       head + "metadata: {name: x}\nvalue: 1\n---\n" + head + "metadata: {name: x}\nvalue: 2\n",
       "PriorityClass \"x\" is given twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = FromYaml(c.text);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().msg, c.want);
  }
}

// plugin/pkg/admission/priority admission.go, on pod creation.
TEST(ResolvePriorityTest, AsThePriorityAdmissionPluginDoes) {
  auto file = FromYaml(kClasses);
  ASSERT_TRUE(file.ok()) << file.error().msg;
  const PriorityClasses built_in = PriorityClasses::BuiltIn();
  struct Case {
    std::string name;
    Pod pod;
    const PriorityClasses* classes;
    std::optional<int32_t> want_priority;
    std::string want_class;
    std::string want_error = "";
  };
  const std::vector<Case> cases = {
      {"a built-in class without a file", MakePod().PriorityClassName("system-node-critical").Obj(),
       &built_in, 2000001000, "system-node-critical"},
      {"an unknown class without a file is left alone", MakePod().PriorityClassName("x").Obj(),
       &built_in, std::nullopt, "x"},
      {"no class without a file is left alone", MakePod().Obj(), &built_in, std::nullopt, ""},
      {"a class from the file", MakePod().PriorityClassName("business-critical").Obj(), &*file,
       1000000000, "business-critical"},
      {"no class: the global default", MakePod().Obj(), &*file, 50, "batch-low"},
      {"the same priority given", MakePod().PriorityClassName("batch").Priority(100).Obj(), &*file,
       100, "batch"},
      {"an unknown class with a file", MakePod().PriorityClassName("gold").Obj(), &*file,
       std::nullopt, "gold", "spec.priorityClassName: no PriorityClass with name gold was found"},
      {"another priority given", MakePod().PriorityClassName("batch").Priority(7).Obj(), &*file, 7,
       "batch",
       "spec.priority: the integer value of priority (7) must not be provided in pod spec; "
       "priority admission controller computed 100 from the given PriorityClass name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pod pod = c.pod;
    nodegate::Status r = ResolvePriority(pod, *c.classes);
    EXPECT_EQ(r.ok() ? "" : r.error().msg, c.want_error);
    EXPECT_EQ(pod.priority, c.want_priority);
    EXPECT_EQ(pod.priority_class_name, c.want_class);
  }
  // A file without a default: unnamed pods get 0.
  auto no_default = FromYaml(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n");
  ASSERT_TRUE(no_default.ok());
  Pod pod = MakePod().Obj();
  ASSERT_TRUE(ResolvePriority(pod, *no_default).ok());
  EXPECT_EQ(pod.priority, 0);
  EXPECT_EQ(pod.priority_class_name, "");
}

}  // namespace
}  // namespace nodegate::admit
