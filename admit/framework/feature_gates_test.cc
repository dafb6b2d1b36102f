#include "admit/framework/feature_gates.h"

#include <gtest/gtest.h>

namespace nodegate::admit {
namespace {

TEST(FeatureGatesTest, DefaultsOfTheLatestRelease) {
  FeatureGates gates;
  EXPECT_TRUE(gates.Enabled(kGatePodLevelResources));
  EXPECT_TRUE(gates.Enabled(kGateSidecarContainers));
  EXPECT_TRUE(gates.Enabled(kGateSupplementalGroupsPolicy));
  EXPECT_TRUE(gates.Enabled(kGateInPlacePodVerticalScaling));
  EXPECT_FALSE(gates.Enabled(kGateTaintTolerationComparisonOperators));
}

TEST(FeatureGatesTest, ParseOverridesDefaults) {
  auto gates =
      FeatureGates::Parse("PodLevelResources=false, TaintTolerationComparisonOperators=true,");
  ASSERT_TRUE(gates.ok()) << gates.error().msg;
  EXPECT_FALSE(gates->Enabled(kGatePodLevelResources));
  EXPECT_TRUE(gates->Enabled(kGateTaintTolerationComparisonOperators));
  EXPECT_TRUE(gates->Enabled(kGateSidecarContainers));
  EXPECT_TRUE(FeatureGates::Parse("").ok());
}

TEST(FeatureGatesTest, ParseErrors) {
  auto unknown = FeatureGates::Parse("NoSuchGate=true");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().msg.find("unknown feature gate \"NoSuchGate\""), std::string::npos);
  auto value = FeatureGates::Parse("SidecarContainers=yes");
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.error().msg.find("invalid value \"yes\""), std::string::npos);
  auto shape = FeatureGates::Parse("SidecarContainers");
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().msg.find("want Name=true|false"), std::string::npos);
}

}  // namespace
}  // namespace nodegate::admit
