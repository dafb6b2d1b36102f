#include "admit/framework/feature_gates.h"

namespace nodegate::admit {

FeatureGates::FeatureGates()
    : gates_{
          {std::string(kGatePodLevelResources), true},
          {std::string(kGateSidecarContainers), true},
          {std::string(kGateSupplementalGroupsPolicy), true},
          {std::string(kGateTaintTolerationComparisonOperators), false},
          {std::string(kGateInPlacePodVerticalScaling), true},
          {std::string(kGateDynamicResourceAllocation), true},
      } {}

Result<FeatureGates> FeatureGates::Parse(std::string_view list) {
  FeatureGates gates;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string_view item = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Trim blanks around items ("A=true, B=false").
    while (!item.empty() && item.front() == ' ') {
      item.remove_prefix(1);
    }
    while (!item.empty() && item.back() == ' ') {
      item.remove_suffix(1);
    }
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return Error(kErrInvalidConfig,
                     "--feature-gates: \"" + std::string(item) + "\": want Name=true|false");
      }
      std::string_view name = item.substr(0, eq);
      std::string_view value = item.substr(eq + 1);
      auto it = gates.gates_.find(name);
      if (it == gates.gates_.end()) {
        std::string known;
        for (const auto& [n, v] : gates.gates_) {
          known += known.empty() ? n : ", " + n;
        }
        return Error(kErrInvalidConfig, "--feature-gates: unknown feature gate \"" +
                                            std::string(name) + "\" (known: " + known + ")");
      }
      if (value == "true") {
        it->second = true;
      } else if (value == "false") {
        it->second = false;
      } else {
        return Error(kErrInvalidConfig, "--feature-gates: " + std::string(name) +
                                            ": invalid value \"" + std::string(value) +
                                            "\" (want true or false)");
      }
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return gates;
}

bool FeatureGates::Enabled(std::string_view name) const {
  auto it = gates_.find(name);
  return it != gates_.end() && it->second;
}

FeatureGates& FeatureGates::Set(std::string_view name, bool enabled) {
  auto it = gates_.find(name);
  if (it != gates_.end()) {
    it->second = enabled;
  }
  return *this;
}

}  // namespace nodegate::admit
