#include "explain/scheduler/fit_error.h"

#include <algorithm>
#include <map>

namespace nodegate::explain {
namespace {

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) {
      out += separator;
    }
    out += p;
  }
  return out;
}

}  // namespace

std::string FitErrorMessage(const Diagnosis& d) {
  std::string message = "0/" + std::to_string(d.num_all_nodes) + " nodes are available:";
  if (!d.pre_filter_msg.empty()) {
    // Every node got the PreFilter's status: counting them again would repeat it.
    message += " " + d.pre_filter_msg + ".";
  } else {
    std::map<std::string, size_t> counts;
    for (const auto& [node, status] : d.node_statuses) {
      for (const std::string& reason : status.reasons) {
        ++counts[reason];
      }
    }
    if (d.node_statuses.size() < d.num_all_nodes) {
      const size_t absent = d.num_all_nodes - d.node_statuses.size();
      for (const std::string& reason : d.absent.reasons) {
        counts[reason] += absent;
      }
    }
    std::vector<std::string> histogram;
    for (const auto& [reason, count] : counts) {
      histogram.push_back(std::to_string(count) + " " + reason);
    }
    // sort.Strings: byte order, so "10 ..." sorts before "2 ...".
    std::sort(histogram.begin(), histogram.end());
    if (!histogram.empty()) {
      message += " " + Join(histogram, ", ") + ".";
    }
  }
  if (!d.post_filter_msg.empty()) {
    message += " " + d.post_filter_msg;
  }
  return message;
}

std::string PostFilterMessage(const std::vector<PluginOutcome>& outcomes) {
  std::vector<std::string> reasons;
  for (const PluginOutcome& o : outcomes) {
    switch (o.code) {
      case PluginOutcome::Code::kSuccess:
        return "";
      case PluginOutcome::Code::kUnresolvable:
      case PluginOutcome::Code::kError:
        return Join(o.reasons, ", ");
      case PluginOutcome::Code::kUnschedulable:
        reasons.insert(reasons.end(), o.reasons.begin(), o.reasons.end());
        break;
    }
  }
  return Join(reasons, ", ");
}

std::string AbsentNodesReason(const std::vector<std::string>& plugins) {
  std::vector<std::string> sorted = plugins;
  std::sort(sorted.begin(), sorted.end());
  return "node(s) didn't satisfy plugin(s) [" + Join(sorted, " ") + "]";
}

}  // namespace nodegate::explain
