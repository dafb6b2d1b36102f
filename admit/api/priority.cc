#include "admit/api/priority.h"

#include <limits>

#include "lib/base/result.h"

namespace nodegate::admit {
namespace {

using nlohmann::json;

constexpr std::string_view kSystemClusterCritical = "system-cluster-critical";
constexpr std::string_view kSystemNodeCritical = "system-node-critical";
constexpr int32_t kSystemClusterCriticalValue = 2000000000;
constexpr int32_t kSystemNodeCriticalValue = 2000001000;

std::vector<PriorityClass> SystemClasses() {
  return {{std::string(kSystemClusterCritical), kSystemClusterCriticalValue, false},
          {std::string(kSystemNodeCritical), kSystemNodeCriticalValue, false}};
}

Result<PriorityClass> DecodePriorityClass(const json& object, const std::string& where) {
  const json* metadata = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (metadata == nullptr || !metadata->is_object() || !metadata->contains("name") ||
      !(*metadata)["name"].is_string() || (*metadata)["name"].get<std::string>().empty()) {
    return Error(kErrInvalidConfig, where + ": metadata.name: required");
  }
  PriorityClass pc;
  pc.name = (*metadata)["name"].get<std::string>();
  const json* value = object.contains("value") ? &object["value"] : nullptr;
  if (value == nullptr || !value->is_number_integer() ||
      (value->is_number_unsigned() &&
       value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) ||
      value->get<int64_t>() < std::numeric_limits<int32_t>::min() ||
      value->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    return Error(kErrInvalidConfig,
                 where + ": value: required, an integer between -2147483648 and 2147483647");
  }
  pc.value = static_cast<int32_t>(value->get<int64_t>());
  if (object.contains("globalDefault") && !object["globalDefault"].is_null()) {
    if (!object["globalDefault"].is_boolean()) {
      return Error(kErrInvalidConfig, where + ": globalDefault: expected boolean");
    }
    pc.global_default = object["globalDefault"].get<bool>();
  }
  return pc;
}

// Validate: ValidatePriorityClass: "system-" names are reserved to the built-in classes and
// their values; other classes stay at or below 1000000000.
nodegate::Status Validate(const PriorityClass& pc, const std::string& where) {
  for (const PriorityClass& system : SystemClasses()) {
    if (pc.name == system.name) {
      if (pc.value != system.value) {
        return Error(kErrInvalidConfig, where + ": value: " + pc.name + " has value " +
                                            std::to_string(system.value) + ", got " +
                                            std::to_string(pc.value));
      }
      return OkStatus();
    }
  }
  if (pc.name.starts_with("system-")) {
    return Error(kErrInvalidConfig,
                 where +
                     ": metadata.name: priority class names with 'system-' prefix are "
                     "reserved for system use only, got \"" +
                     pc.name + "\"");
  }
  if (pc.value > kHighestUserDefinablePriority) {
    return Error(kErrInvalidConfig,
                 where + ": value: maximum allowed value of a user defined priority is " +
                     std::to_string(kHighestUserDefinablePriority) + ", got " +
                     std::to_string(pc.value));
  }
  return OkStatus();
}

nodegate::Status CollectClasses(const json& value, const std::string& where,
                                std::vector<PriorityClass>& out) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      NG_RETURN_IF_ERROR(CollectClasses(value[i], where + "[" + std::to_string(i) + "]", out));
    }
    return OkStatus();
  }
  if (!value.is_object()) {
    return Error(kErrInvalidConfig, where + ": expected an object");
  }
  const auto kind_it = value.find("kind");
  const std::string kind =
      kind_it != value.end() && kind_it->is_string() ? kind_it->get<std::string>() : "";
  if (kind == "List" || kind == "PriorityClassList") {
    const json items = value.value("items", json::array());
    if (!items.is_array() && !items.is_null()) {
      return Error(kErrInvalidConfig, where + ": items: expected list");
    }
    for (size_t i = 0; i < items.size(); ++i) {
      NG_RETURN_IF_ERROR(
          CollectClasses(items[i], where + ": items[" + std::to_string(i) + "]", out));
    }
    return OkStatus();
  }
  if (kind != "PriorityClass") {
    return Error(
        kErrInvalidConfig,
        where + ": kind: expected PriorityClass, PriorityClassList or List, got \"" + kind + "\"");
  }
  NG_ASSIGN_OR_RETURN(auto pc, DecodePriorityClass(value, where));
  NG_RETURN_IF_ERROR(Validate(pc, where));
  out.push_back(std::move(pc));
  return OkStatus();
}

}  // namespace

PriorityClasses PriorityClasses::BuiltIn() {
  PriorityClasses set;
  set.classes_ = SystemClasses();
  return set;
}

Result<PriorityClasses> PriorityClasses::FromDocuments(const std::vector<Document>& documents) {
  std::vector<PriorityClass> found;
  for (const Document& doc : documents) {
    NG_RETURN_IF_ERROR(CollectClasses(doc.value, doc.where, found));
  }
  PriorityClasses set = BuiltIn();
  set.complete_ = true;
  for (PriorityClass& pc : found) {
    const PriorityClass* known = set.Find(pc.name);
    if (known != nullptr && !(known->value == pc.value && pc.name.starts_with("system-"))) {
      return Error(kErrInvalidConfig, "PriorityClass \"" + pc.name + "\" is given twice");
    }
    if (known == nullptr) {
      set.classes_.push_back(std::move(pc));
    }
  }
  return set;
}

const PriorityClass* PriorityClasses::Find(const std::string& name) const {
  for (const PriorityClass& pc : classes_) {
    if (pc.name == name) {
      return &pc;
    }
  }
  return nullptr;
}

const PriorityClass* PriorityClasses::GlobalDefault() const {
  const PriorityClass* best = nullptr;
  for (const PriorityClass& pc : classes_) {
    if (pc.global_default && (best == nullptr || pc.value < best->value)) {
      best = &pc;
    }
  }
  return best;
}

Result<PriorityClasses> LoadPriorityClasses(const std::string& path) {
  NG_ASSIGN_OR_RETURN(auto text, ReadInput(path));
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, path == "-" ? "<stdin>" : path));
  return PriorityClasses::FromDocuments(docs);
}

nodegate::Status ResolvePriority(Pod& pod, const PriorityClasses& classes) {
  std::optional<int32_t> computed;
  if (!pod.priority_class_name.empty()) {
    if (const PriorityClass* pc = classes.Find(pod.priority_class_name)) {
      computed = pc->value;
    } else if (classes.complete()) {
      return Error(kErrInvalidConfig, "spec.priorityClassName: no PriorityClass with name " +
                                          pod.priority_class_name + " was found");
    }
  } else if (classes.complete()) {
    const PriorityClass* fallback = classes.GlobalDefault();
    computed = fallback != nullptr ? fallback->value : 0;
    if (fallback != nullptr) {
      pod.priority_class_name = fallback->name;
    }
  }
  if (!computed.has_value()) {
    return OkStatus();  // a class this run does not know: left as given
  }
  if (pod.priority.has_value() && *pod.priority != *computed) {
    return Error(kErrInvalidConfig,
                 "spec.priority: the integer value of priority (" + std::to_string(*pod.priority) +
                     ") must not be provided in pod spec; priority admission controller computed " +
                     std::to_string(*computed) + " from the given PriorityClass name");
  }
  pod.priority = computed;
  return OkStatus();
}

}  // namespace nodegate::admit
