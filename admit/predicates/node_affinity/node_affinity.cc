#include "admit/predicates/node_affinity/node_affinity.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "admit/api/resource_names.h"

namespace nodegate::admit::node_affinity {
namespace {

// ParseInt64: strconv.ParseInt(s, 10, 64): optional sign, decimal digits, leading zeros allowed.
std::optional<int64_t> ParseInt64(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i >= s.size() || !std::all_of(s.begin() + static_cast<long>(i), s.end(),
                                    [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

std::string Values(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i ? ", " : "") + values[i];
  }
  return out + "]";
}

std::string Describe(const NodeSelectorRequirement& r) {
  if (r.op == "Exists" || r.op == "DoesNotExist") {
    return r.key + " " + r.op;
  }
  if (r.op == "Gt" || r.op == "Lt") {
    return r.key + " " + r.op + " " + (r.values.empty() ? "" : r.values[0]);
  }
  return r.key + " " + r.op + " " + Values(r.values);
}

std::string LabelState(const std::string& key, const std::map<std::string, std::string>& labels) {
  auto it = labels.find(key);
  if (it == labels.end()) {
    return "node has no label " + key;
  }
  return "node has " + key + "=" + it->second;
}

// TermMatches: one non-empty term; `why` gets the first failing requirement.
bool TermMatches(const NodeSelectorTerm& term, const Node& node, std::string* why) {
  // Parse errors make the whole term fail, before anything is compared.
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    std::string err = ValidateLabelRequirement(term.match_expressions[i]);
    if (!err.empty()) {
      *why = "matchExpressions[" + std::to_string(i) + "] is invalid (" + err +
             "), so the term matches nothing";
      return false;
    }
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    std::string err = ValidateFieldRequirement(term.match_fields[i]);
    if (!err.empty()) {
      *why = "matchFields[" + std::to_string(i) + "] is invalid (" + err +
             "), so the term matches nothing";
      return false;
    }
  }
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    const NodeSelectorRequirement& r = term.match_expressions[i];
    if (!LabelRequirementMatches(r, node.labels)) {
      *why = "matchExpressions[" + std::to_string(i) + "] " + Describe(r) + ": " +
             LabelState(r.key, node.labels);
      return false;
    }
  }
  // Field requirements are only evaluated against a node with a name (upstream quirk).
  if (!node.name.empty()) {
    for (size_t i = 0; i < term.match_fields.size(); ++i) {
      const NodeSelectorRequirement& r = term.match_fields[i];
      const bool equal = node.name == r.values[0];
      if ((r.op == "In") != equal) {
        *why = "matchFields[" + std::to_string(i) + "] " + Describe(r) + ": node name is \"" +
               node.name + "\"";
        return false;
      }
    }
  }
  return true;
}

class NodeAffinity final : public Predicate {
 public:
  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    std::string why;
    if (PodMatchesNode(pod.pod, node.node(), &why)) {
      return Status::Success();
    }
    return Status::Unresolvable(std::string(kErrReasonPod), why);
  }
};

}  // namespace

std::string ValidateLabelRequirement(const NodeSelectorRequirement& r) {
  if (!IsQualifiedName(r.key)) {
    return "key \"" + r.key + "\" is not a valid label key";
  }
  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) {
      return "for 'in', 'notin' operators, values set can't be empty";
    }
  } else if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) {
      return "values set must be empty for exists and does not exist";
    }
  } else if (r.op == "Gt" || r.op == "Lt") {
    if (r.values.size() != 1) {
      return "for 'Gt', 'Lt' operators, exactly one value is required";
    }
    if (!ParseInt64(r.values[0])) {
      return "for 'Gt', 'Lt' operators, the value must be an integer";
    }
  } else {
    return "operator \"" + r.op + "\" is not supported";
  }
  for (const std::string& v : r.values) {
    if (!IsValidLabelValue(v)) {
      return "value \"" + v + "\" is not a valid label value";
    }
  }
  return "";
}

std::string ValidateFieldRequirement(const NodeSelectorRequirement& r) {
  if (r.key != "metadata.name") {
    return "field \"" + r.key + "\" is not supported, only metadata.name";
  }
  if (r.values.size() != 1) {
    return "must have one element";
  }
  if (r.op != "In" && r.op != "NotIn") {
    return "operator \"" + r.op + "\" is not supported for fields";
  }
  return "";
}

bool LabelRequirementMatches(const NodeSelectorRequirement& r,
                             const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  auto in_values = [&] {
    return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  };
  if (r.op == "In") {
    return in_values();
  }
  if (r.op == "NotIn") {
    return !in_values();
  }
  if (r.op == "Exists") {
    return has;
  }
  if (r.op == "DoesNotExist") {
    return !has;
  }
  if (r.op == "Gt" || r.op == "Lt") {
    if (!has || r.values.size() != 1) {
      return false;
    }
    auto label = ParseInt64(it->second);
    auto bound = ParseInt64(r.values[0]);
    if (!label || !bound) {
      return false;
    }
    return r.op == "Gt" ? *label > *bound : *label < *bound;
  }
  return false;
}

bool NodeSelectorMatches(const NodeSelector& selector, const Node& node, std::string* why) {
  std::string reasons;
  size_t non_empty = 0;
  for (size_t i = 0; i < selector.terms.size(); ++i) {
    const NodeSelectorTerm& term = selector.terms[i];
    std::string term_why;
    if (term.match_expressions.empty() && term.match_fields.empty()) {
      term_why = "empty term matches no node";
    } else {
      ++non_empty;
      if (TermMatches(term, node, &term_why)) {
        return true;
      }
    }
    reasons += (reasons.empty() ? "" : "; ") + std::string("nodeSelectorTerms[") +
               std::to_string(i) + "]: " + term_why;
  }
  if (why != nullptr) {
    if (selector.terms.empty()) {
      *why = "required node affinity has no nodeSelectorTerms, which matches no node";
    } else {
      *why = "required node affinity: no nodeSelectorTerm matched (" + reasons + ")";
    }
  }
  (void)non_empty;
  return false;
}

bool PodMatchesNode(const Pod& pod, const Node& node, std::string* why) {
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) {
      if (why != nullptr) {
        *why = "nodeSelector " + key + "=" + value + ": " + LabelState(key, node.labels);
      }
      return false;
    }
  }
  if (!pod.required_node_affinity.has_value()) {
    return true;
  }
  return NodeSelectorMatches(*pod.required_node_affinity, node, why);
}

PredicatePtr New(const PredicateOptions&) { return std::make_unique<NodeAffinity>(); }

}  // namespace nodegate::admit::node_affinity
