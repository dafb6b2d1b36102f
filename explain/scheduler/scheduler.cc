#include "explain/scheduler/scheduler.h"

#include <algorithm>
#include <set>

#include "admit/check/pod_facts.h"
#include "admit/framework/registry.h"
#include "admit/predicates/node_affinity/node_affinity.h"
#include "admit/predicates/node_ports/node_ports.h"
#include "admit/predicates/node_resources_fit/node_resources_fit.h"
#include "admit/predicates/node_unschedulable/node_unschedulable.h"
#include "admit/predicates/registry.h"
#include "admit/predicates/taint_toleration/taint_toleration.h"
#include "explain/scheduler/fit_error.h"
#include "explain/scheduler/preemption.h"

namespace nodegate::explain {
namespace {

constexpr size_t kTopConsumers = 3;

std::string OwnerOf(const admit::NodeInfo& node, const std::string& key) {
  const admit::PodFacts* p = node.FindPod(key);
  return p != nullptr ? p->Owner() : "";
}

std::string WithOwner(const std::string& pod, const std::string& owner) {
  return owner.empty() ? "pod " + pod + " (no controller)" : "pod " + pod + " of " + owner;
}

std::vector<Finding> PortFindings(const admit::PodInfo& pod, const admit::NodeInfo& node,
                                  const std::string& reason) {
  Finding f;
  f.reason = reason;
  for (const admit::node_ports::PortConflict& c :
       admit::node_ports::FindConflicts(pod.ports, node.used_ports())) {
    PortHolding h;
    h.port = c.wanted.port.ToString();
    h.protocol = c.wanted.port.protocol;
    h.number = c.wanted.port.port;
    h.container = c.wanted.container;
    h.holder = c.holder.holder.pod;
    h.holder_container = c.holder.holder.container;
    h.holder_port = c.holder.port.ToString();
    h.owner = OwnerOf(node, h.holder);
    f.explanation += (f.explanation.empty() ? "" : "; ") + std::string("hostPort ") + h.port +
                     " (container \"" + h.container + "\") is held by " +
                     WithOwner(h.holder, h.owner) + ", container \"" + h.holder_container + "\" (" +
                     h.holder_port + ")";
    f.ports.push_back(std::move(h));
  }
  return {std::move(f)};
}

std::vector<Finding> ResourceFindings(const admit::PodInfo& pod, const admit::NodeInfo& node,
                                      const admit::Status& status) {
  std::vector<Finding> out;
  std::vector<admit::node_resources_fit::Insufficient> insufficient =
      admit::node_resources_fit::Fits(pod, node);
  for (const admit::Failure& failure : status.failures()) {
    Finding f;
    f.reason = failure.reason;
    f.explanation = failure.detail;
    for (const auto& i : insufficient) {
      if (i.reason != failure.reason) {
        continue;
      }
      Shortage s;
      s.resource = i.numbers.resource;
      s.requested = i.numbers.requested;
      s.used = i.numbers.used;
      s.capacity = i.numbers.capacity;
      if (s.resource != admit::kResourcePods) {
        std::vector<Consumer> users;
        for (const admit::PodFactsPtr& p : node.pods()) {
          if (const int64_t amount = p->requests.Get(s.resource); amount > 0) {
            users.push_back(Consumer{p->key, p->Owner(), amount});
          }
        }
        s.consumers = users.size();
        std::sort(users.begin(), users.end(), [](const Consumer& a, const Consumer& b) {
          return a.amount != b.amount ? a.amount > b.amount : a.pod < b.pod;
        });
        users.resize(std::min(users.size(), kTopConsumers));
        s.top = std::move(users);
        if (!s.top.empty()) {
          // The owners of the top consumers, which admit's own words leave out.
          std::string owners;
          for (const Consumer& c : s.top) {
            if (!c.owner.empty()) {
              owners += (owners.empty() ? "" : ", ") + c.pod + " is " + c.owner + "'s";
            }
          }
          if (!owners.empty()) {
            f.explanation += " (" + owners + ")";
          }
        }
      } else {
        s.consumers = node.pods().size();
      }
      f.shortage = std::move(s);
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}

NodeVerdict VerdictOf(const admit::Status& status, const admit::PodInfo& pod,
                      const admit::NodeInfo& node, bool comparison_operators) {
  NodeVerdict v;
  v.node = node.node().name;
  if (status.IsSuccess()) {
    v.state = NodeVerdict::State::kFits;
    return v;
  }
  v.state = NodeVerdict::State::kFails;
  v.plugin = status.plugin();
  v.code = status.code();
  const std::string& plugin = status.plugin();
  if (plugin == admit::node_ports::kName && !status.failures().empty()) {
    v.findings = PortFindings(pod, node, status.failures().front().reason);
    return v;
  }
  if (plugin == admit::node_resources_fit::kName) {
    v.findings = ResourceFindings(pod, node, status);
    return v;
  }
  for (const admit::Failure& failure : status.failures()) {
    Finding f;
    f.reason = failure.reason;
    f.explanation = failure.detail;
    if (plugin == admit::taint_toleration::kName) {
      if (const admit::Taint* t = admit::taint_toleration::FindMatchingUntoleratedTaint(
              node.node().taints, pod.pod.tolerations,
              admit::taint_toleration::DoNotScheduleTaintsFilter, comparison_operators)) {
        f.taint = *t;
      }
    }
    v.findings.push_back(std::move(f));
  }
  return v;
}

}  // namespace

std::optional<std::vector<std::string>> NodeNamesOfAffinity(const admit::Pod& pod) {
  if (!pod.required_node_affinity.has_value() || pod.required_node_affinity->terms.empty()) {
    return std::nullopt;
  }
  std::set<std::string> names;
  for (const admit::NodeSelectorTerm& term : pod.required_node_affinity->terms) {
    std::optional<std::set<std::string>> term_names;
    for (const admit::NodeSelectorRequirement& r : term.match_fields) {
      if (r.key != "metadata.name" || r.op != "In") {
        continue;
      }
      std::set<std::string> values(r.values.begin(), r.values.end());
      if (!term_names) {
        term_names = std::move(values);
      } else {
        std::set<std::string> both;
        std::set_intersection(term_names->begin(), term_names->end(), values.begin(), values.end(),
                              std::inserter(both, both.begin()));
        term_names = std::move(both);
      }
    }
    if (!term_names) {
      return std::nullopt;  // a term without names: every node may match (terms are ORed)
    }
    names.insert(term_names->begin(), term_names->end());
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Scheduler::Scheduler(const Cluster& cluster, SchedulerOptions options)
    : cluster_(cluster), options_(std::move(options)) {
  profile_ = admit::NewSchedulerProfile(admit::PredicateOptions{options_.gates});
  for (const nlohmann::json& object : cluster_.unbound()) {
    auto c = DecodeCandidate(object, "pod");
    if (!c.ok() || c->nominated_node.empty() || cluster_.FindNode(c->nominated_node) == nullptr) {
      continue;
    }
    nominated_[c->nominated_node].push_back(
        NominatedPod{c->pod.Key(), PriorityOf(c->pod),
                     admit::MakePodFacts(c->pod, options_.gates, /*already_on_node=*/false)});
  }
}

const admit::NodeInfo& Scheduler::WithNominated(const admit::NodeInfo& node, int32_t priority,
                                                const std::string& self,
                                                std::optional<admit::NodeInfo>& scratch) const {
  auto it = nominated_.find(node.node().name);
  if (it == nominated_.end()) {
    return node;
  }
  bool added = false;
  for (const NominatedPod& n : it->second) {
    if (n.priority >= priority && n.key != self) {
      if (!added) {
        scratch.emplace(node);
        added = true;
      }
      scratch->AddPod(n.facts);
    }
  }
  return added ? *scratch : node;
}

NodeVerdict Scheduler::Filter(const admit::PodInfo& pod, const admit::NodeInfo& node) const {
  return VerdictOf(admit::RunFilters(profile_, pod, node), pod, node,
                   options_.gates.Enabled(admit::kGateTaintTolerationComparisonOperators));
}

namespace {

// Described: the explanation's account of the pod itself, before any node is looked at.
PodExplanation Described(const CandidatePod& candidate, const Cluster& cluster) {
  PodExplanation e;
  const admit::Pod& original = candidate.pod;
  e.pod = original.Key();
  e.owner = admit::OwnerName(original);
  e.phase = original.phase;
  e.node_name = original.node_name;
  e.priority = PriorityOf(original);
  e.source = original.source;
  e.notes = candidate.notes;
  e.not_evaluated = candidate.not_evaluated;
  for (std::string& t : AntiAffinityThreats(cluster, original)) {
    e.not_evaluated.push_back(std::move(t));
  }
  if (!original.node_name.empty()) {
    e.notes.push_back("the pod is bound to node " + original.node_name + " (phase " +
                      (original.phase.empty() ? "unknown" : original.phase) +
                      "); below is where the scheduler would place it now, itself left out");
  }
  return e;
}

// WithheldBecause: why the summary line would not be the scheduler's for this pod (another
// scheduler, scheduling gates, Filters nodegate does not run); empty when it would be.
std::vector<std::string> WithheldBecause(const CandidatePod& candidate, const PodExplanation& e) {
  std::vector<std::string> withheld;
  if (!candidate.scheduler_name.empty() && candidate.scheduler_name != kDefaultScheduler) {
    withheld.push_back("the pod names scheduler \"" + candidate.scheduler_name +
                       "\"; these are default-scheduler's Filters");
  }
  if (!candidate.scheduling_gates.empty()) {
    std::string gates;
    for (const std::string& g : candidate.scheduling_gates) {
      gates += (gates.empty() ? "" : ", ") + g;
    }
    withheld.push_back("the pod has schedulingGates (" + gates +
                       "): the scheduler does not try it until they are removed");
  }
  if (!e.not_evaluated.empty()) {
    withheld.push_back("the scheduler also runs Filters nodegate does not evaluate for this pod");
  }
  return withheld;
}

// BaseNodes: the node each pod starts from, as the cache has it, without the candidate's old
// self on the node it is bound to (copied once, when that node is first asked for).
class BaseNodes {
 public:
  BaseNodes(std::string old_node, std::string self)
      : old_node_(std::move(old_node)), self_(std::move(self)) {}
  const admit::NodeInfo& operator()(const NodeEntry& entry) {
    if (!old_node_.empty() && entry.node->name == old_node_ && entry.info.FindPod(self_)) {
      if (!own_) {
        own_ = entry.info;
        own_->RemovePod(self_);
      }
      return *own_;
    }
    return entry.info;
  }

 private:
  std::string old_node_;
  std::string self_;
  std::optional<admit::NodeInfo> own_;
};

// PreFilter, in the profile's order: NodeAffinity, NodePorts (nothing to reject),
// NodeResourcesFit. Sets e.pre_filter when one rejects the pod for every node.
void RunPreFilter(const admit::Pod& pod, const admit::FeatureGates& gates,
                  const std::optional<std::vector<std::string>>& names, PodExplanation& e) {
  if (names && names->empty()) {
    e.pre_filter = std::string(kPodAffinityTermsConflict);
    e.not_considered_explanation =
        "PreFilter NodeAffinity: every term of the required node affinity names nodes by "
        "metadata.name and together they name none";
  } else if (!gates.Enabled(admit::kGateSidecarContainers) &&
             admit::HasRestartableInitContainer(pod)) {
    e.pre_filter = std::string(admit::node_resources_fit::kErrReasonSidecarGateOff);
    e.not_considered_explanation =
        "PreFilter NodeResourcesFit: an init container has restartPolicy: Always and the "
        "SidecarContainers gate is off";
  }
}

// PostFilter: DynamicResources (when its gate is on), then DefaultPreemption; the outcomes
// for the FitError's preemption part.
std::vector<PluginOutcome> RunPostFilter(const Scheduler& scheduler, const CandidatePod& candidate,
                                         const admit::PodInfo& info, BaseNodes& base,
                                         PodExplanation& e) {
  const Cluster& cluster = scheduler.cluster();
  std::vector<PluginOutcome> outcomes;
  if (scheduler.options().gates.Enabled(admit::kGateDynamicResourceAllocation)) {
    if (!e.pre_filter.empty()) {
      // Its PreFilter never ran (an earlier one rejected the pod), so it finds no state of
      // its own and fails; the framework stops at an error.
      outcomes.push_back({PluginOutcome::Code::kError, {"not found"}});
      e.preemption.not_attempted =
          "the scheduler's PostFilter stops at DynamicResources, whose PreFilter did not run";
      return outcomes;
    }
    outcomes.push_back({PluginOutcome::Code::kUnschedulable, {std::string(kNoClaimsToDeallocate)}});
  }
  PreemptionScope scope;
  scope.num_all_nodes = cluster.nodes().size();
  for (const NodeVerdict& v : e.nodes) {
    scope.verdicts.push_back(&v);
  }
  scope.node = [&](const std::string& name) -> const admit::NodeInfo& {
    return base(*cluster.FindNode(name));
  };
  outcomes.push_back(Preempt(scheduler, candidate, info, scope, e.preemption));
  return outcomes;
}

// FilterNodes: the Filters on every node the pod may go to (all, or those its required node
// affinity names), each node's verdict into `e` and its status into `d`.
void FilterNodes(const Scheduler& scheduler, const admit::PodInfo& info, const admit::Pod& pod,
                 const std::optional<std::vector<std::string>>& names, BaseNodes& base,
                 PodExplanation& e, Diagnosis& d) {
  std::set<std::string> restricted;
  if (names) {
    restricted.insert(names->begin(), names->end());
    d.absent = {admit::Code::kUnschedulableAndUnresolvable,
                {AbsentNodesReason({std::string(admit::node_affinity::kName)})}};
    e.not_considered_reason = d.absent.reasons[0];
    e.not_considered_explanation = "the pod's required node affinity names other nodes";
  }
  const int32_t priority = PriorityOf(pod);
  const std::string self = pod.Key();
  for (const NodeEntry& entry : scheduler.cluster().nodes()) {
    if (names && restricted.count(entry.node->name) == 0) {
      ++e.not_considered;
      continue;
    }
    std::optional<admit::NodeInfo> scratch;
    NodeVerdict v =
        scheduler.Filter(info, scheduler.WithNominated(base(entry), priority, self, scratch));
    if (v.state == NodeVerdict::State::kFits) {
      ++e.fitting;
    } else {
      NodeStatus status{v.code, {}};
      for (const Finding& f : v.findings) {
        status.reasons.push_back(f.reason);
      }
      d.node_statuses.emplace_back(v.node, std::move(status));
    }
    e.nodes.push_back(std::move(v));
  }
}

}  // namespace

PodExplanation Scheduler::Explain(const CandidatePod& candidate) const {
  PodExplanation e = Described(candidate, cluster_);
  // A bound pod is placed as if it were new: itself left off its node.
  admit::Pod pod = candidate.pod;
  pod.node_name.clear();
  const std::vector<std::string> withheld = WithheldBecause(candidate, e);
  const admit::PodInfo info = admit::MakePodInfo(pod, options_.gates, /*already_on_node=*/false);
  BaseNodes base(candidate.pod.node_name, pod.Key());

  Diagnosis d;
  d.num_all_nodes = cluster_.nodes().size();
  const std::optional<std::vector<std::string>> names = NodeNamesOfAffinity(pod);
  RunPreFilter(pod, options_.gates, names, e);
  if (!e.pre_filter.empty()) {
    d.pre_filter_msg = e.pre_filter;
    d.absent = {admit::Code::kUnschedulableAndUnresolvable, {e.pre_filter}};
    e.not_considered = cluster_.nodes().size();
    e.not_considered_reason = e.pre_filter;
  } else {
    FilterNodes(*this, info, pod, names, base, e, d);
  }

  if (e.fitting > 0) {
    e.preemption.not_attempted = "the pod fits on " + std::to_string(e.fitting) + " node(s)";
    return e;
  }
  if (cluster_.nodes().empty()) {
    // ErrNoNodesAvailable: not a FitError.
    e.summary_withheld = "the cluster has no nodes";
    e.preemption.not_attempted = "no nodes";
    return e;
  }
  d.post_filter_msg = PostFilterMessage(RunPostFilter(*this, candidate, info, base, e));
  if (withheld.empty()) {
    e.summary = FitErrorMessage(d);
  } else {
    std::string why;
    for (const std::string& w : withheld) {
      why += (why.empty() ? "" : "; ") + w;
    }
    e.summary_withheld = why;
  }
  return e;
}

}  // namespace nodegate::explain
