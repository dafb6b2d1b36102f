#include "webhook/review/review.h"

#include <utility>

#include "admit/api/load.h"
#include "lib/base/result.h"

namespace nodegate::webhook {
namespace {

using nlohmann::json;

// Field readers: a missing or null member leaves `out` empty; any other type is an error
// naming the field, as the API server's strict decoding would refuse it.
Result<bool> ReadString(const json& object, const char* key, const std::string& where,
                        std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return false;
  }
  if (!it->is_string()) {
    return Error(kErrDecode, where + "." + key + ": expected string, got " + it->type_name());
  }
  out = it->get<std::string>();
  return true;
}

Result<const json*> ReadObject(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return static_cast<const json*>(nullptr);
  }
  if (!it->is_object()) {
    return Error(kErrDecode, where + "." + key + ": expected object, got " + it->type_name());
  }
  return &*it;
}

// ReadKind: request.kind or request.resource ({group, version, kind|resource}); the webhook
// judges core/v1 pods only, so the group and version are returned through `group_version`.
Result<bool> ReadGroupVersion(const json& object, const char* key, const char* name_key,
                              const std::string& where, std::string& group_version,
                              std::string& name) {
  NG_ASSIGN_OR_RETURN(const json* member, ReadObject(object, key, where));
  if (member == nullptr) {
    return false;
  }
  const std::string inner = where + "." + key;
  std::string group;
  std::string version;
  for (auto [field, out] :
       {std::pair{"group", &group}, std::pair{"version", &version}, std::pair{name_key, &name}}) {
    NG_RETURN_IF_ERROR(ReadString(*member, field, inner, *out));
  }
  group_version = group.empty() ? version : group + "/" + version;
  return true;
}

// ReadEnvelope: the review's request object, once apiVersion and kind say it is a v1 review.
Result<const json*> ReadEnvelope(const json& review, const std::string& where) {
  std::string api_version;
  std::string kind;
  NG_RETURN_IF_ERROR(ReadString(review, "apiVersion", where, api_version));
  NG_RETURN_IF_ERROR(ReadString(review, "kind", where, kind));
  if (api_version != kReviewApiVersion || kind != kReviewKind) {
    return Error(kErrDecode, where + ": expected apiVersion " + std::string(kReviewApiVersion) +
                                 " kind " + std::string(kReviewKind) + ", got \"" + api_version +
                                 "\" \"" + kind + "\"");
  }
  NG_ASSIGN_OR_RETURN(const json* request, ReadObject(review, "request", where));
  if (request == nullptr) {
    return Error(kErrDecode, where + ": no request");
  }
  return request;
}

// ReadTarget: which object the request is about (uid, names, operation, kind and resource).
Status ReadTarget(const json& request, const std::string& at, ReviewRequest& out) {
  for (auto [field, target] :
       {std::pair{"uid", &out.uid}, std::pair{"subResource", &out.sub_resource},
        std::pair{"name", &out.name}, std::pair{"namespace", &out.namespace_name},
        std::pair{"operation", &out.operation}}) {
    NG_RETURN_IF_ERROR(ReadString(request, field, at, *target));
  }
  if (out.uid.empty()) {
    return Error(kErrDecode, at + ".uid: missing");
  }
  std::string kind_group_version;
  std::string resource_group_version;
  if (auto r = ReadGroupVersion(request, "kind", "kind", at, kind_group_version, out.kind);
      !r.ok()) {
    return r.error();
  }
  if (auto r = ReadGroupVersion(request, "resource", "resource", at, resource_group_version,
                                out.resource);
      !r.ok()) {
    return r.error();
  }
  // Only core/v1 objects are pods to us; anything else is judged as "not a pod".
  if (kind_group_version != "v1") {
    out.kind = kind_group_version + ", Kind=" + out.kind;
  }
  if (resource_group_version != "v1") {
    out.resource = resource_group_version + ", Resource=" + out.resource;
  }
  return OkStatus();
}

// ReadRequester: userInfo's username and groups, and whether the request is a dry run.
Status ReadRequester(const json& request, const std::string& at, ReviewRequest& out) {
  NG_ASSIGN_OR_RETURN(const json* user, ReadObject(request, "userInfo", at));
  if (user != nullptr) {
    const std::string user_at = at + ".userInfo";
    NG_RETURN_IF_ERROR(ReadString(*user, "username", user_at, out.username));
    auto groups = user->find("groups");
    if (groups != user->end() && !groups->is_null()) {
      if (!groups->is_array()) {
        return Error(kErrDecode, user_at + ".groups: expected array, got " + groups->type_name());
      }
      for (const json& group : *groups) {
        if (!group.is_string()) {
          return Error(kErrDecode, user_at + ".groups: expected strings, got " + group.type_name());
        }
        out.groups.push_back(group.get<std::string>());
      }
    }
  }
  auto dry_run = request.find("dryRun");
  if (dry_run != request.end() && !dry_run->is_null()) {
    if (!dry_run->is_boolean()) {
      return Error(kErrDecode, at + ".dryRun: expected boolean, got " + dry_run->type_name());
    }
    out.dry_run = dry_run->get<bool>();
  }
  return OkStatus();
}

}  // namespace

Result<ReviewRequest> DecodeReview(std::string_view body) {
  if (body.size() > kMaxReviewBytes) {
    return Error(kErrDecode, "AdmissionReview: larger than 3 MiB");
  }
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || body[first] != '{') {
    return Error(kErrDecode, "AdmissionReview: expected a JSON object");
  }
  NG_ASSIGN_OR_RETURN(auto documents, admit::ParseDocuments(body, "AdmissionReview"));
  NG_ASSIGN_OR_RETURN(const json* request,
                      ReadEnvelope(documents.front().value, "AdmissionReview"));
  const std::string at = "AdmissionReview.request";
  ReviewRequest out;
  NG_RETURN_IF_ERROR(ReadTarget(*request, at, out));
  NG_RETURN_IF_ERROR(ReadRequester(*request, at, out));
  if (auto object = request->find("object"); object != request->end()) {
    out.object = *object;
  }
  return out;
}

std::string FitWarning(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxWarningBytes));
  for (char c : text) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
  }
  if (out.size() <= kMaxWarningBytes) {
    return out;
  }
  size_t cut = kMaxWarningBytes - 3;
  // Step back over UTF-8 continuation bytes so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  out.resize(cut);
  out += "...";
  return out;
}

std::string EncodeReviewResponse(const ReviewResponse& response) {
  json body = {{"uid", response.uid}, {"allowed", response.allowed}};
  if (!response.allowed) {
    json status = {{"metadata", json::object()},
                   {"status", "Failure"},
                   {"code", response.code < 400 ? 400 : response.code}};
    if (!response.reason.empty()) {
      status["reason"] = response.reason;
    }
    if (!response.message.empty()) {
      status["message"] = response.message;
    }
    body["status"] = std::move(status);
  }
  if (!response.warnings.empty()) {
    json warnings = json::array();
    for (const std::string& w : response.warnings) {
      warnings.push_back(FitWarning(w));
    }
    body["warnings"] = std::move(warnings);
  }
  const json review = {
      {"apiVersion", kReviewApiVersion}, {"kind", kReviewKind}, {"response", std::move(body)}};
  // Names come from the pod as bytes; invalid UTF-8 is replaced so the answer is always JSON.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace nodegate::webhook
