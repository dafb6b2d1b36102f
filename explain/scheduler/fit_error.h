#pragma once
// The kube-scheduler's FitError message, byte for byte (pkg/scheduler/framework/types.go
// FitError.Error, DefaultPreemption's PostFilter, the framework's RunPostFilterPlugins):
//
//   "0/N nodes are available: " + PreFilterMsg + "."            when a PreFilter rejected
//   "0/N nodes are available: " + "<count> <reason>, ..." + "."  otherwise: every reason of
//        every node's status counted (a node absent from the map counts the absent status),
//        "%v %v" of count and reason, sorted as Go's sort.Strings sorts (bytes), ", "-joined
//   + " " + PostFilterMsg                                        when PostFilter said anything
//
// The PostFilter message joins the reasons of every PostFilter plugin that returned
// Unschedulable (", "), unless one succeeded (then it is empty) or returned an error or
// UnschedulableAndUnresolvable (then it is that plugin's message alone). DefaultPreemption's is
// "preemption: " + a FitError of the preemption's own node statuses, where nodes it did not
// try count as "Preemption is not helpful for scheduling".
//
//   Diagnosis d{.num_all_nodes = 3, .absent = {kUnschedulableAndUnresolvable, {}}};
//   d.node_statuses.push_back({"n1", {Code::kUnschedulable, {"Insufficient cpu"}}});
//   FitErrorMessage(d);  // "0/3 nodes are available: 1 Insufficient cpu."

#include <string>
#include <utility>
#include <vector>

#include "admit/framework/status.h"

namespace nodegate::explain {

// NodeStatus: one entry of the scheduler's NodeToStatus map.
struct NodeStatus {
  admit::Code code = admit::Code::kUnschedulableAndUnresolvable;
  std::vector<std::string> reasons;
};

// Diagnosis: what a FitError carries.
struct Diagnosis {
  size_t num_all_nodes = 0;
  std::vector<std::pair<std::string, NodeStatus>> node_statuses;  // nodes with a status
  NodeStatus absent;  // the status of every node not in node_statuses
  std::string pre_filter_msg;
  std::string post_filter_msg;
};

// FitErrorMessage: FitError.Error().
std::string FitErrorMessage(const Diagnosis& diagnosis);

// PluginOutcome: what one PostFilter plugin returned.
struct PluginOutcome {
  enum class Code { kSuccess, kUnschedulable, kUnresolvable, kError };
  Code code = Code::kUnschedulable;
  std::vector<std::string> reasons;  // an error's message is its one reason
};

// PostFilterMessage: the message of RunPostFilterPlugins' status for these outcomes, in the
// profile's PostFilter order.
std::string PostFilterMessage(const std::vector<PluginOutcome>& outcomes);

// Strings DefaultPreemption and the framework use.
inline constexpr std::string_view kPreemptionNotHelpful =
    "Preemption is not helpful for scheduling";
inline constexpr std::string_view kNoPreemptionVictims =
    "No preemption victims found for incoming pod";
inline constexpr std::string_view kNotEligibleNever = "not eligible due to preemptionPolicy=Never.";
// DynamicResources' PostFilter for a pod without resource claims.
inline constexpr std::string_view kNoClaimsToDeallocate = "no new claims to deallocate";
// NodeAffinity's PreFilter when every term names nodes by metadata.name and they conflict.
inline constexpr std::string_view kPodAffinityTermsConflict = "pod affinity terms conflict";

// AbsentNodesReason: the status of nodes outside a PreFilterResult ("node(s) didn't satisfy
// plugin(s) [NodeAffinity]"; plugins sorted, Go's %v of a []string).
std::string AbsentNodesReason(const std::vector<std::string>& plugins);

}  // namespace nodegate::explain
