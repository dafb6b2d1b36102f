#include "admit/predicates/node_ports/node_ports.h"

namespace nodegate::admit::node_ports {
namespace {

class NodePorts final : public Predicate {
 public:
  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    if (pod.ports.empty()) {
      return Status::Success();
    }
    std::vector<PortConflict> conflicts = FindConflicts(pod.ports, node.used_ports());
    if (conflicts.empty()) {
      return Status::Success();
    }
    std::string detail;
    for (const PortConflict& c : conflicts) {
      detail += (detail.empty() ? "" : "; ") + ExplainConflict(c);
    }
    return Status::Unschedulable({Failure{std::string(kErrReason), detail, std::nullopt}});
  }
};

}  // namespace

std::vector<PortConflict> FindConflicts(const std::vector<WantedPort>& wanted,
                                        const HostPortSet& used) {
  std::vector<PortConflict> out;
  for (const WantedPort& w : wanted) {
    if (const HostPortSet::Entry* e = used.FindConflict(w.port)) {
      out.push_back({w, *e});
    }
  }
  return out;
}

bool Fits(const std::vector<WantedPort>& wanted, const HostPortSet& used) {
  for (const WantedPort& w : wanted) {
    if (used.FindConflict(w.port) != nullptr) {
      return false;
    }
  }
  return true;
}

std::string ExplainConflict(const PortConflict& c) {
  std::string s = "hostPort " + c.wanted.port.ToString() + " (container \"" + c.wanted.container +
                  "\") is held by pod " + c.holder.holder.pod + ", container \"" +
                  c.holder.holder.container + "\" (" + c.holder.port.ToString() + ")";
  if (!c.holder.holder.source.empty()) {
    s += " from " + c.holder.holder.source;
  }
  return s;
}

PredicatePtr New(const PredicateOptions&) { return std::make_unique<NodePorts>(); }

}  // namespace nodegate::admit::node_ports
