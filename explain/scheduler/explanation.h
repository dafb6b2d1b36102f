#pragma once
// What `explain` finds out about one pod: the scheduler's verdict per node with nodegate's
// explanation of each failure (who holds the port, who uses up the resource, which taint,
// which affinity term), the FitError summary line when it can be the scheduler's, and what
// DefaultPreemption would do. Plain data: report/ renders it as text, JSON or YAML.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/status.h"

namespace nodegate::explain {

// PortHolding: a host port the pod wants and the pod on the node already holding it.
struct PortHolding {
  std::string port;       // the wanted port: "53/UDP on 0.0.0.0"
  std::string protocol;   // "UDP"
  int32_t number = 0;     // 53
  std::string container;  // the pod's container that wants it
  std::string holder;     // NAMESPACE/NAME of the pod holding it
  std::string holder_container;
  std::string holder_port;  // as the holder declares it: "53/UDP on 0.0.0.0"
  std::string owner;        // the holder's controller ("DaemonSet kube-system/node-local-dns")
};

// Consumer: a pod on the node requesting some of a resource.
struct Consumer {
  std::string pod;
  std::string owner;
  int64_t amount = 0;  // comparison units (cpu in millicores)
};

// Shortage: NodeResourcesFit's numbers for one resource, and the biggest consumers.
struct Shortage {
  std::string resource;
  int64_t requested = 0;
  int64_t used = 0;
  int64_t capacity = 0;
  size_t consumers = 0;       // pods requesting any of it
  std::vector<Consumer> top;  // the largest, at most three
};

// Finding: one reason a node fails, with nodegate's explanation.
struct Finding {
  std::string reason;       // the upstream reason string, verbatim
  std::string explanation;  // nodegate's
  std::vector<PortHolding> ports;
  std::optional<Shortage> shortage;
  std::optional<admit::Taint> taint;
};

struct NodeVerdict {
  enum class State { kFits, kFails, kNotConsidered };
  std::string node;
  State state = State::kFits;
  std::string plugin;  // the failing plugin (the scheduler reports the first only)
  admit::Code code = admit::Code::kSuccess;
  std::vector<Finding> findings;
};

struct Victim {
  std::string pod;
  std::string owner;
  int32_t priority = 0;
};

// PreemptionNode: one node where preemption was tried (its status was Unschedulable).
struct PreemptionNode {
  std::string node;
  bool candidate = false;            // evicting `victims` makes room
  std::vector<Victim> victims;       // most important first, as the scheduler lists them
  std::vector<std::string> reasons;  // when not a candidate: why (the preemption's status)
};

struct Preemption {
  bool attempted = false;
  std::string not_attempted;  // why not (the pod fits, preemptionPolicy Never, ...)
  std::vector<PreemptionNode> nodes;
  size_t candidates = 0;
  std::string nominated;                  // the node the scheduler's choice falls on
  std::vector<std::string> tied;          // other candidates equal by every rule (the scheduler's
                                          // evaluation order decides between them)
  std::vector<std::string> not_modelled;  // what of preemption nodegate does not know
};

struct PodExplanation {
  std::string pod;  // NAMESPACE/NAME
  std::string owner;
  std::string phase;
  std::string node_name;  // spec.nodeName when bound
  int32_t priority = 0;
  std::string source;  // the file, for -f
  std::vector<std::string> notes;
  std::vector<std::string> not_evaluated;  // Filters the scheduler runs and nodegate does not
  std::string pre_filter;                  // a PreFilter rejection's reason
  std::vector<NodeVerdict> nodes;          // the nodes the Filters ran on, in the list's order
  // Nodes the Filters never ran on: all of them after a PreFilter rejection, or those outside
  // NodeAffinity's PreFilter result (a DaemonSet's pod names its node); their status.
  size_t not_considered = 0;
  std::string not_considered_reason;       // upstream's
  std::string not_considered_explanation;  // nodegate's
  size_t fitting = 0;
  std::optional<std::string> summary;  // the FitError line, when it is the scheduler's
  std::string summary_withheld;        // why there is none although no node fits
  Preemption preemption;
};

}  // namespace nodegate::explain
