#pragma once
// The admission.k8s.io/v1 AdmissionReview exchange of a validating webhook, as the API server
// builds the request (CreateV1AdmissionReview) and verifies the answer
// (VerifyAdmissionResponse): the response is an AdmissionReview of the same apiVersion and kind
// whose response.uid echoes request.uid, with `allowed`, on a denial a metav1.Status, never a
// patch, and warnings the API server passes on to the client.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::webhook {

inline constexpr std::string_view kReviewApiVersion = "admission.k8s.io/v1";
inline constexpr std::string_view kReviewKind = "AdmissionReview";
// The API server refuses request bodies over 3 MiB, so no review it sends is larger.
inline constexpr size_t kMaxReviewBytes = 3u << 20;
// What a warning may hold: the API server passes up to 256 characters per warning, and asks
// webhooks to keep under 120 so that clients show them whole.
inline constexpr size_t kMaxWarningBytes = 120;

struct ReviewRequest {
  std::string uid;
  std::string kind;      // request.kind.kind ("Pod"); group and version must be core/v1
  std::string resource;  // request.resource.resource ("pods")
  std::string sub_resource;
  std::string name;  // empty when the name is generated
  std::string namespace_name;
  std::string operation;  // CREATE, UPDATE, DELETE, CONNECT
  std::string username;
  std::vector<std::string> groups;
  nlohmann::json object;  // request.object (null when absent)
  bool dry_run = false;
};

// DecodeReview: an AdmissionReview request body. An error (not JSON, nested too deep, another
// apiVersion or kind, no request, no uid, a field of the wrong type) names what is wrong.
Result<ReviewRequest> DecodeReview(std::string_view body);

struct ReviewResponse {
  std::string uid;
  bool allowed = true;
  // A denial's metav1.Status: code (4xx), reason (shown by kubectl as "Error from server
  // (REASON)") and message.
  int code = 0;
  std::string reason;
  std::string message;
  std::vector<std::string> warnings;  // each at most kMaxWarningBytes
};

// EncodeReviewResponse: the AdmissionReview JSON answering a request (no patch, no patchType).
std::string EncodeReviewResponse(const ReviewResponse& response);

// FitWarning: the text cut to at most kMaxWarningBytes on a UTF-8 boundary, ending in "..."
// when it was cut; control characters become spaces (a warning is one header line).
std::string FitWarning(std::string_view text);

}  // namespace nodegate::webhook
