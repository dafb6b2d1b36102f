#include "admit/predicates/node_resources_fit/node_resources_fit.h"

#include <algorithm>

namespace nodegate::admit::node_resources_fit {
namespace {

constexpr size_t kTopConsumers = 3;

class NodeResourcesFit final : public Predicate {
 public:
  explicit NodeResourcesFit(bool sidecars) : sidecars_(sidecars) {}

  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    // PreFilter: a sidecar cannot be honoured when the gate is off.
    if (!sidecars_ && HasRestartableInitContainer(pod.pod)) {
      return Status::Unresolvable(std::string(kErrReasonSidecarGateOff),
                                  "the pod has an init container with restartPolicy: Always and "
                                  "--feature-gates SidecarContainers=false");
    }
    std::vector<Insufficient> insufficient = Fits(pod, node);
    if (insufficient.empty()) {
      return Status::Success();
    }
    std::vector<Failure> failures;
    bool unresolvable = false;
    for (const Insufficient& i : insufficient) {
      failures.push_back(Failure{i.reason, Explain(i, node), i.numbers});
      unresolvable = unresolvable || i.unresolvable;
    }
    return unresolvable ? Status::Unresolvable(std::move(failures))
                        : Status::Unschedulable(std::move(failures));
  }

 private:
  bool sidecars_;
};

}  // namespace

std::string InsufficientReason(std::string_view resource) {
  return "Insufficient " + std::string(resource);
}

std::vector<Insufficient> Fits(const PodInfo& pod, const NodeInfo& node) {
  std::vector<Insufficient> out;
  const Resource& allocatable = node.allocatable();
  const Resource& requested = node.requested();
  const Resource& request = pod.requests;

  const auto pods_on_node = static_cast<int64_t>(node.pods().size());
  if (pods_on_node + 1 > allocatable.allowed_pod_number) {
    out.push_back({{std::string(kResourcePods), 1, pods_on_node, allocatable.allowed_pod_number},
                   std::string(kErrReasonTooManyPods),
                   false});
  }
  if (request.IsZeroRequest()) {
    return out;
  }
  auto check = [&](std::string_view name, int64_t want, int64_t capacity, int64_t used) {
    if (want > 0 && want > capacity - used) {
      out.push_back(
          {{std::string(name), want, used, capacity}, InsufficientReason(name), want > capacity});
    }
  };
  check(kResourceCpu, request.milli_cpu, allocatable.milli_cpu, requested.milli_cpu);
  check(kResourceMemory, request.memory, allocatable.memory, requested.memory);
  check(kResourceEphemeralStorage, request.ephemeral_storage, allocatable.ephemeral_storage,
        requested.ephemeral_storage);
  for (const auto& [name, want] : request.scalar) {
    if (want == 0) {
      continue;
    }
    check(name, want, allocatable.Get(name), requested.Get(name));
  }
  return out;
}

std::string Explain(const Insufficient& insufficient, const NodeInfo& node) {
  const InsufficientResource& n = insufficient.numbers;
  const std::string& resource = n.resource;
  if (resource == kResourcePods) {
    return "the node allows " + std::to_string(n.capacity) + " pods and " + std::to_string(n.used) +
           " are already on it";
  }
  std::string s = resource + ": the pod requests " + FormatResourceAmount(resource, n.requested) +
                  ", the node has " + FormatResourceAmount(resource, n.capacity) + " allocatable";
  if (n.capacity == 0) {
    s += " (the node does not offer " + resource + ")";
  }
  // The pods using most of it.
  std::vector<std::pair<int64_t, const PodFacts*>> users;
  for (const PodFactsPtr& p : node.pods()) {
    const int64_t amount = p->requests.Get(resource);
    if (amount > 0) {
      users.emplace_back(amount, p.get());
    }
  }
  s += " and " + FormatResourceAmount(resource, n.used) + " already requested by " +
       std::to_string(users.size()) + " pod(s)";
  if (n.requested > n.capacity) {
    s += "; the request exceeds the whole allocatable";
  } else {
    s += ", leaving " + FormatResourceAmount(resource, std::max<int64_t>(0, n.capacity - n.used));
  }
  if (!users.empty()) {
    const size_t top = std::min(kTopConsumers, users.size());
    std::partial_sort(users.begin(), users.begin() + static_cast<std::ptrdiff_t>(top), users.end(),
                      [](const auto& a, const auto& b) {
                        if (a.first != b.first) {
                          return a.first > b.first;
                        }
                        return a.second->key < b.second->key;
                      });
    s += "; top: ";
    for (size_t i = 0; i < top; ++i) {
      s += (i ? ", " : "") + users[i].second->key + " " +
           FormatResourceAmount(resource, users[i].first);
    }
  }
  return s;
}

PredicatePtr New(const PredicateOptions& options) {
  return std::make_unique<NodeResourcesFit>(options.gates.Enabled(kGateSidecarContainers));
}

}  // namespace nodegate::admit::node_resources_fit
