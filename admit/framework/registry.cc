#include "admit/framework/registry.h"

namespace nodegate::admit {

bool Registry::Register(std::string name, PredicateFactory factory) {
  return factories_.emplace(std::move(name), std::move(factory)).second;
}

Result<PredicatePtr> Registry::Create(std::string_view name,
                                      const PredicateOptions& options) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    return Error(kErrInvalidConfig, "unknown predicate \"" + std::string(name) + "\"");
  }
  return it->second(options);
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) {
    out.push_back(name);
  }
  return out;
}

Status RunFilters(const std::vector<PredicatePtr>& predicates, const PodInfo& pod,
                  const NodeInfo& node) {
  for (const PredicatePtr& p : predicates) {
    Status s = p->Filter(pod, node);
    if (!s.IsSuccess()) {
      s.WithPlugin(std::string(p->Name()));
      return s;
    }
  }
  return Status::Success();
}

}  // namespace nodegate::admit
