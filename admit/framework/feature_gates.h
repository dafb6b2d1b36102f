#pragma once
// FeatureGates: the Kubernetes feature gates that change admission outcomes, defaulting as the
// latest Kubernetes release does (v1.34):
//   PodLevelResources                   beta, on   spec.resources replaces container sums
//   SidecarContainers                   GA, on     restartable init containers
//   SupplementalGroupsPolicy            beta, on   kubelet rejects Strict on nodes without it
//   TaintTolerationComparisonOperators  alpha, off toleration operators Lt and Gt
//   InPlacePodVerticalScaling           beta, on   pods on the node count their status resources
//   DynamicResourceAllocation           GA, on     the scheduler's DynamicResources plugin runs
//                                                  (explain: its PostFilter message)
//
//   auto gates = FeatureGates::Parse("PodLevelResources=false,SidecarContainers=true");

#include <map>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::admit {

inline constexpr std::string_view kGatePodLevelResources = "PodLevelResources";
inline constexpr std::string_view kGateSidecarContainers = "SidecarContainers";
inline constexpr std::string_view kGateSupplementalGroupsPolicy = "SupplementalGroupsPolicy";
inline constexpr std::string_view kGateTaintTolerationComparisonOperators =
    "TaintTolerationComparisonOperators";
inline constexpr std::string_view kGateInPlacePodVerticalScaling = "InPlacePodVerticalScaling";
inline constexpr std::string_view kGateDynamicResourceAllocation = "DynamicResourceAllocation";

class FeatureGates {
 public:
  // Defaults of the latest release.
  FeatureGates();

  // Parse: "Name=true|false,..." over the defaults. Unknown names and values are errors.
  static Result<FeatureGates> Parse(std::string_view list);

  bool Enabled(std::string_view name) const;
  // Set: for tests and builders; unknown names are ignored.
  FeatureGates& Set(std::string_view name, bool enabled);

  // Known gate names with their current values, for --help and reports.
  const std::map<std::string, bool, std::less<>>& All() const { return gates_; }

 private:
  std::map<std::string, bool, std::less<>> gates_;
};

}  // namespace nodegate::admit
