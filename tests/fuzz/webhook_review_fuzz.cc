// nodegate webhook's request body (webhook/review/review.h), as any client of the webhook's
// port can send it: the AdmissionReview decoder, then the judge on a node of two pod slots
// with one pod holding port 53, then the encoder. Invariants: an answer is valid JSON of
// apiVersion admission.k8s.io/v1, echoes request.uid, has no patch, a denial has a code of at
// least 400, and every warning fits in 120 bytes.

#include <nlohmann/json.hpp>

#include "admit/api/decode.h"
#include "kube/decode/objects.h"
#include "tests/fuzz/fuzz_target.h"
#include "webhook/judge/judge.h"
#include "webhook/review/review.h"

namespace {

nodegate::webhook::NodeStates& States() {
  static nodegate::webhook::NodeStates* states = [] {
    nodegate::admit::CheckOptions options;
    options.profile = nodegate::admit::Profile::kKubelet;
    auto* s = new nodegate::webhook::NodeStates(options, std::chrono::seconds(30));
    auto node = nodegate::admit::DecodeNode(nlohmann::json::parse(R"({"metadata": {"name": "n1"},
          "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "2"}}})"),
                                            "node");
    auto pod = nodegate::admit::DecodePod(
        nlohmann::json::parse(R"({"metadata": {"name": "dns", "namespace": "kube-system",
          "uid": "u1"}, "spec": {"nodeName": "n1", "containers": [{"name": "dns",
          "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]}]}})"),
        "pod");
    std::vector<nodegate::kube::NodeRecord> nodes;
    nodes.push_back({std::make_shared<const nodegate::admit::Node>(std::move(node).value()), "1"});
    s->ReplaceNodes(std::move(nodes));
    std::vector<nodegate::kube::PodRecord> pods;
    pods.push_back(nodegate::kube::PodRecordOf(*pod, options.gates));
    s->ReplacePods(std::move(pods));
    return s;
  }();
  return *states;
}

}  // namespace

NG_FUZZ_TARGET(webhook_review) {
  auto review = webhook::DecodeReview(data);
  if (!review.ok()) {
    return;
  }
  webhook::JudgeContext context;
  context.states = &States();
  // Half the inputs take the fallback path; its read fails, as an unreachable API server does.
  const bool synced = data.size() % 2 == 0;
  context.synced = [synced] { return synced; };
  context.read_node =
      [](const std::string&,
         webhook::Clock::time_point) -> nodegate::Result<std::optional<webhook::NodeSnapshot>> {
    return nodegate::Error(nodegate::kErrIo, "unreachable");
  };
  // Dry runs only: the shared node must not fill up across inputs.
  review->dry_run = true;
  const webhook::Judgement judgement =
      webhook::Judge(*review, context, webhook::Clock::now() + std::chrono::seconds(1));
  const std::string body = webhook::EncodeReviewResponse(judgement.response);
  const auto answer = nlohmann::json::parse(body);
  NG_FUZZ_CHECK(answer["apiVersion"] == "admission.k8s.io/v1");
  NG_FUZZ_CHECK(answer["response"]["uid"] == review->uid);
  NG_FUZZ_CHECK(!answer["response"].contains("patch"));
  if (!judgement.response.allowed) {
    NG_FUZZ_CHECK(answer["response"]["status"]["code"].get<int>() >= 400);
  }
  if (answer["response"].contains("warnings")) {
    for (const auto& w : answer["response"]["warnings"]) {
      NG_FUZZ_CHECK(w.get<std::string>().size() <= webhook::kMaxWarningBytes);
    }
  }
}
