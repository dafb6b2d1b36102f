#pragma once
// Registry: predicate name -> factory, like the scheduler's plugins/registry.go. Profiles pick
// predicates by name; adding a predicate is one folder plus one Register call.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "admit/framework/predicate.h"
#include "lib/base/result.h"

namespace nodegate::admit {

using PredicateFactory = std::function<PredicatePtr(const PredicateOptions&)>;

class Registry {
 public:
  // Register: false when the name is taken.
  bool Register(std::string name, PredicateFactory factory);
  Result<PredicatePtr> Create(std::string_view name, const PredicateOptions& options) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PredicateFactory, std::less<>> factories_;
};

// RunFilters: the scheduler's RunFilterPlugins for one node: predicates in order, stopping at
// the first that does not return Success; that status (with its plugin name) is the result.
Status RunFilters(const std::vector<PredicatePtr>& predicates, const PodInfo& pod,
                  const NodeInfo& node);

}  // namespace nodegate::admit
