#include "admit/framework/pod_facts.h"

namespace nodegate::admit {

// pkg/apis/scheduling SystemCriticalPriority: priorities at or above it are critical.
constexpr int32_t kSystemCriticalPriority = 2000000000;

std::string CriticalReasonOf(bool static_pod, bool mirror_pod, std::optional<int32_t> priority) {
  if (static_pod) {
    return "static pod";
  }
  if (mirror_pod) {
    return "mirror pod";
  }
  if (priority.has_value() && *priority >= kSystemCriticalPriority) {
    return "priority " + std::to_string(*priority);
  }
  return "";
}

std::string PodFacts::CriticalReason() const {
  return CriticalReasonOf(static_pod, mirror_pod, priority);
}

std::string OwnerName(const Pod& pod) {
  if (!pod.owner.has_value() || pod.owner->name.empty()) {
    return "";
  }
  return pod.owner->kind + " " + pod.namespace_name + "/" + pod.owner->name;
}

}  // namespace nodegate::admit
