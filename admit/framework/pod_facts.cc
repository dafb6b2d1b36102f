#include "admit/framework/pod_facts.h"

#include <mutex>
#include <unordered_map>

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

SharedText InternText(std::string_view text) {
  if (text.empty()) {
    return nullptr;
  }
  static std::mutex mu;
  static std::unordered_map<std::string, std::weak_ptr<const std::string>> table;
  static size_t sweep_at = 1024;
  std::lock_guard lock(mu);
  std::string key(text);
  if (auto it = table.find(key); it != table.end()) {
    if (SharedText kept = it->second.lock()) {
      return kept;
    }
  }
  if (table.size() >= sweep_at) {
    std::erase_if(table, [](const auto& entry) { return entry.second.expired(); });
    sweep_at = std::max<size_t>(1024, 2 * table.size());
  }
  auto made = std::make_shared<const std::string>(key);
  table[std::move(key)] = made;
  return made;
}

const std::string& PodFacts::Owner() const {
  static const std::string kNone;
  return owner ? *owner : kNone;
}

bool SameAmounts(const Resource& a, const Resource& b) {
  return a.milli_cpu == b.milli_cpu && a.memory == b.memory &&
         a.ephemeral_storage == b.ephemeral_storage &&
         a.allowed_pod_number == b.allowed_pod_number && a.scalar == b.scalar;
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
