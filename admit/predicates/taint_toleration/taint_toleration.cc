#include "admit/predicates/taint_toleration/taint_toleration.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "admit/api/quantity.h"

namespace nodegate::admit::taint_toleration {
namespace {

// ParseCanonicalInt64: an optional '-', then digits without leading zeros ("0" alone is fine).
std::optional<int64_t> ParseCanonicalInt64(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (!s.empty() && s[0] == '-') {
    negative = true;
    i = 1;
  }
  if (i >= s.size() || (s[i] == '0' && s.size() > i + 1) || (negative && s[i] == '0')) {
    return std::nullopt;
  }
  Int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return std::nullopt;
    }
    v = v * 10 + (s[i] - '0');
    if (v > static_cast<Int128>(INT64_MAX) + 1) {
      return std::nullopt;
    }
  }
  if (negative) {
    v = -v;
  }
  if (v > INT64_MAX || v < INT64_MIN) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

class TaintToleration final : public Predicate {
 public:
  explicit TaintToleration(bool comparison_operators)
      : comparison_operators_(comparison_operators) {}

  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    const Taint* taint = FindMatchingUntoleratedTaint(
        node.node().taints, pod.pod.tolerations, DoNotScheduleTaintsFilter, comparison_operators_);
    if (taint == nullptr) {
      return Status::Success();
    }
    return Status::Unresolvable(std::string(kErrReasonNotMatch),
                                "taint " + TaintToString(*taint) +
                                    " is not tolerated by any of the pod's " +
                                    std::to_string(pod.pod.tolerations.size()) + " toleration(s)");
  }

 private:
  bool comparison_operators_;
};

}  // namespace

bool ToleratesTaint(const Toleration& toleration, const Taint& taint, bool comparison_operators) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) {
    return false;
  }
  if (!toleration.key.empty() && toleration.key != taint.key) {
    return false;
  }
  if (toleration.op.empty() || toleration.op == "Equal") {
    return toleration.value == taint.value;
  }
  if (toleration.op == "Exists") {
    return true;
  }
  if (toleration.op == "Lt" || toleration.op == "Gt") {
    if (!comparison_operators) {
      return false;
    }
    auto taint_value = ParseCanonicalInt64(taint.value);
    auto toleration_value = ParseCanonicalInt64(toleration.value);
    if (!taint_value || !toleration_value) {
      return false;
    }
    return toleration.op == "Lt" ? *taint_value < *toleration_value
                                 : *taint_value > *toleration_value;
  }
  return false;
}

bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint,
                              bool comparison_operators) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    return ToleratesTaint(t, taint, comparison_operators);
  });
}

const Taint* FindMatchingUntoleratedTaint(const std::vector<Taint>& taints,
                                          const std::vector<Toleration>& tolerations,
                                          const TaintFilter& filter, bool comparison_operators) {
  for (const Taint& taint : taints) {
    if (filter && !filter(taint)) {
      continue;
    }
    if (!TolerationsTolerateTaint(tolerations, taint, comparison_operators)) {
      return &taint;
    }
  }
  return nullptr;
}

bool DoNotScheduleTaintsFilter(const Taint& taint) {
  return taint.effect == "NoSchedule" || taint.effect == "NoExecute";
}

std::string TaintToString(const Taint& taint) {
  std::string s = taint.key;
  if (!taint.value.empty()) {
    s += "=" + taint.value;
  }
  return s + ":" + taint.effect;
}

PredicatePtr New(const PredicateOptions& options) {
  return std::make_unique<TaintToleration>(
      options.gates.Enabled(kGateTaintTolerationComparisonOperators));
}

}  // namespace nodegate::admit::taint_toleration
