#include "webhook/judge/judge.h"

#include <algorithm>
#include <utility>

#include "admit/api/decode.h"

namespace nodegate::webhook {
namespace {

constexpr std::string_view kNodesGroup = "system:nodes";
constexpr int kDeniedCode = 403;

// StringMember: a string member, or "" when it is absent or of another type.
std::string StringMember(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Judgement Allow(const ReviewRequest& request, std::string reason,
                std::optional<std::string> warning = std::nullopt) {
  Judgement j;
  j.response.uid = request.uid;
  j.response.allowed = true;
  if (warning) {
    j.response.warnings.push_back(FitWarning(*warning));
  }
  j.verdict = "allowed";
  j.reason = std::move(reason);
  return j;
}

// Named: the judgement with the pod and node it was about, for the log.
Judgement Named(Judgement j, const admit::Pod& pod) {
  j.pod = pod.Key();
  j.node = pod.node_name;
  return j;
}

// EvictionWarning: "... evicts ns/a, ns/b and 3 more to admit this pod" within the limit.
std::string EvictionWarning(const std::string& node, const admit::PodVerdict& verdict) {
  const std::string head = "nodegate: the kubelet on " + node + " admits this pod by evicting ";
  const auto& evictions = verdict.evictions;
  for (size_t shown = evictions.size(); shown > 0; --shown) {
    std::string names;
    for (size_t i = 0; i < shown; ++i) {
      names += (i ? ", " : "") + evictions[i].pod;
    }
    if (shown < evictions.size()) {
      names += " and " + std::to_string(evictions.size() - shown) + " more";
    }
    std::string text = head + names;
    if (text.size() <= kMaxWarningBytes || shown == 1) {
      return text;
    }
  }
  return head + std::to_string(evictions.size()) + " pods";
}

}  // namespace

std::string DenialMessage(const std::string& node, const admit::PodVerdict& verdict) {
  std::string message = "the kubelet on node " + node + " would reject this pod (" +
                        verdict.admit_reason + "): " + verdict.admit_message;
  for (const admit::FailureReport& failure : verdict.failures) {
    if (!failure.detail.empty()) {
      message += "; " + failure.detail;
    }
  }
  return message;
}

namespace {

// Skipped: why a request is let through unjudged (not a pod CREATE, the kubelet's own
// mirror pods, no pod object), or nullopt.
std::optional<Judgement> Skipped(const ReviewRequest& request) {
  // Only pod CREATEs are judged; the configuration sends nothing else, but a broader rule
  // must not turn into denials.
  if (request.operation != "CREATE" || request.kind != "Pod" || request.resource != "pods" ||
      !request.sub_resource.empty()) {
    return Allow(request, "not-a-pod-create");
  }
  // The kubelet creates mirror pods for its static pods (NodeRestriction bounds them).
  if (std::find(request.groups.begin(), request.groups.end(), kNodesGroup) !=
      request.groups.end()) {
    return Allow(request, "node-user");
  }
  if (!request.object.is_object()) {
    return Allow(request, "unreadable-pod", "nodegate: no pod in the request; not checked");
  }
  return std::nullopt;
}

// PodOfRequest: the pod being created, named and namespaced as it will be.
Result<admit::Pod> PodOfRequest(const ReviewRequest& request) {
  nlohmann::json object = request.object;
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    // A name the API server generates may not be set yet; the request's uid keeps it unique.
    if (!metadata->contains("name") || (*metadata)["name"].is_null()) {
      (*metadata)["name"] = StringMember(*metadata, "generateName") + "<" + request.uid + ">";
    }
    // The request's namespace is the one the pod is created in.
    if ((!metadata->contains("namespace") || (*metadata)["namespace"].is_null()) &&
        !request.namespace_name.empty()) {
      (*metadata)["namespace"] = request.namespace_name;
    }
  }
  return admit::DecodePod(object, "request.object");
}

// OnNode: the node's verdict on the pod, from the cache (through the replicas' coordinator
// when there is one) or, before the first sync, from a read of the node; or the judgement
// that lets the pod through unchecked (a stale cache, a node that cannot be read).
struct OnNode {
  std::optional<Judgement> unchecked;
  NodeVerdict judged;
  std::optional<std::string> uncoordinated;  // a warning: replicas could not agree
};

OnNode JudgeOnNode(const ReviewRequest& request, const JudgeContext& context, const admit::Pod& pod,
                   Clock::time_point deadline) {
  OnNode out;
  const bool assume = !request.dry_run;  // a dry run changes nothing, not even our state
  if (context.synced && context.synced()) {
    if (auto stale = context.stale ? context.stale() : std::nullopt) {
      out.unchecked = Allow(request, "cache-stale",
                            "nodegate: node " + pod.node_name + " not checked: " + *stale);
    } else if (context.coordinator != nullptr) {
      CoordinatedVerdict coordinated = context.coordinator->Judge(pod, request.dry_run, deadline);
      out.judged = std::move(coordinated.judged);
      out.uncoordinated = std::move(coordinated.warning);
    } else {
      out.judged = context.states->JudgeCached(pod, assume);
    }
    return out;
  }
  auto snapshot = context.read_node(pod.node_name, deadline);
  if (!snapshot.ok()) {
    out.unchecked =
        Allow(request, "node-unreadable",
              "nodegate: node " + pod.node_name + " not checked: " + snapshot.error().msg);
  } else if (snapshot->has_value()) {
    out.judged = context.states->JudgeSnapshot(pod, std::move(**snapshot), assume);
  }
  return out;
}

// Answer: the response to a pod its node has judged: allowed (with the evictions it costs),
// or denied with the kubelet's reason.
Judgement Answer(const ReviewRequest& request, const admit::Pod& pod, const OnNode& on_node) {
  const admit::PodVerdict& verdict = on_node.judged.verdict;
  if (verdict.admitted) {
    Judgement j = verdict.evictions.empty()
                      ? Allow(request, "fits")
                      : Allow(request, "preemption", EvictionWarning(pod.node_name, verdict));
    if (on_node.uncoordinated) {
      j.response.warnings.push_back(FitWarning(*on_node.uncoordinated));
    }
    return j;
  }
  Judgement j;
  j.response.uid = request.uid;
  j.response.allowed = false;
  j.response.code = kDeniedCode;
  j.response.reason = verdict.admit_reason;
  j.response.message = DenialMessage(pod.node_name, verdict);
  j.verdict = "denied";
  j.reason = verdict.admit_reason;
  return j;
}

}  // namespace

Judgement Judge(const ReviewRequest& request, const JudgeContext& context,
                Clock::time_point deadline) {
  if (auto skipped = Skipped(request)) {
    return std::move(*skipped);
  }
  auto decoded = PodOfRequest(request);
  if (!decoded.ok()) {
    return Allow(request, "unreadable-pod", "nodegate: pod not checked: " + decoded.error().msg);
  }
  admit::Pod pod = std::move(decoded).value();
  if (pod.node_name.empty()) {
    return Allow(request, "no-node-name");
  }
  if (pod.IsMirrorPod()) {
    return Allow(request, "mirror-pod");
  }
  pod.source = "request";
  OnNode on_node = JudgeOnNode(request, context, pod, deadline);
  if (on_node.unchecked) {
    return Named(std::move(*on_node.unchecked), pod);
  }
  if (!on_node.judged.node_known) {
    return Named(
        Allow(request, "unknown-node",
              "nodegate: node " + pod.node_name + " is not known to the API server; not checked"),
        pod);
  }
  return Named(Answer(request, pod, on_node), pod);
}

}  // namespace nodegate::webhook
