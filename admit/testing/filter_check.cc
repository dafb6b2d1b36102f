#include "admit/testing/filter_check.h"

#include <gtest/gtest.h>

#include "admit/check/pod_facts.h"
#include "admit/framework/node_info.h"

namespace nodegate::admit::testing {

void CheckFilter(const Predicate& predicate, const FeatureGates& gates, const FilterInput& input,
                 bool want_fit, const FilterFailure& failure, std::string_view detail_part) {
  NodeInfo node(input.node);
  for (const Pod& existing : input.existing) {
    node.AddPod(MakePodFacts(existing, gates, true));
  }
  const Status s = predicate.Filter(MakePodInfo(input.pod, gates, false), node);
  EXPECT_EQ(s.IsSuccess(), want_fit);
  if (want_fit || s.failures().empty()) return;
  EXPECT_EQ(s.code(), failure.code);
  EXPECT_EQ(s.Reasons(), std::vector<std::string>{std::string(failure.reason)});
  EXPECT_NE(s.failures()[0].detail.find(detail_part), std::string::npos) << s.failures()[0].detail;
}

}  // namespace nodegate::admit::testing
