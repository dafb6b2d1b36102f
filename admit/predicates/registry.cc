#include "admit/predicates/registry.h"

#include <cstdlib>
#include <iostream>

#include "admit/predicates/node_affinity/node_affinity.h"
#include "admit/predicates/node_name/node_name.h"
#include "admit/predicates/node_ports/node_ports.h"
#include "admit/predicates/node_resources_fit/node_resources_fit.h"
#include "admit/predicates/node_unschedulable/node_unschedulable.h"
#include "admit/predicates/taint_toleration/taint_toleration.h"

namespace nodegate::admit {

Registry NewInTreeRegistry() {
  Registry r;
  r.Register(std::string(node_unschedulable::kName), node_unschedulable::New);
  r.Register(std::string(node_name::kName), node_name::New);
  r.Register(std::string(taint_toleration::kName), taint_toleration::New);
  r.Register(std::string(node_affinity::kName), node_affinity::New);
  r.Register(std::string(node_ports::kName), node_ports::New);
  r.Register(std::string(node_resources_fit::kName), node_resources_fit::New);
  return r;
}

std::vector<PredicatePtr> NewSchedulerProfile(const PredicateOptions& options) {
  const Registry registry = NewInTreeRegistry();
  std::vector<PredicatePtr> out;
  for (std::string_view name : kSchedulerFilterOrder) {
    auto p = registry.Create(name, options);
    if (!p.ok()) {
      // Programming error: the order names a predicate that is not registered.
      std::cerr << "admit: " << p.error().msg << "\n";
      std::abort();
    }
    out.push_back(std::move(p).value());
  }
  return out;
}

}  // namespace nodegate::admit
