#include "lib/etcd/codec.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "lib/base/base64.h"

namespace nodegate::etcd {
namespace {

using Json = nlohmann::json;

Error Malformed(std::string what) {
  return Error(kErrIo, "etcd answered a malformed response: " + std::move(what));
}

const char* TargetName(Compare::Target target) {
  switch (target) {
    case Compare::Target::kVersion:
      return "VERSION";
    case Compare::Target::kCreate:
      return "CREATE";
    case Compare::Target::kMod:
      return "MOD";
    case Compare::Target::kValue:
      return "VALUE";
  }
  return "MOD";
}

const char* OpName(Compare::Op op) {
  switch (op) {
    case Compare::Op::kEqual:
      return "EQUAL";
    case Compare::Op::kGreater:
      return "GREATER";
    case Compare::Op::kLess:
      return "LESS";
    case Compare::Op::kNotEqual:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

Json RangeJson(const RangeRequest& r) {
  Json j = {{"key", Base64Encode(r.key)}};
  if (!r.range_end.empty()) j["range_end"] = Base64Encode(r.range_end);
  if (r.limit > 0) j["limit"] = std::to_string(r.limit);
  if (r.keys_only) j["keys_only"] = true;
  if (r.count_only) j["count_only"] = true;
  if (r.serializable) j["serializable"] = true;
  if (r.revision > 0) j["revision"] = std::to_string(r.revision);
  return j;
}

Json OpJson(const Op& op) {
  if (const auto* range = std::get_if<RangeRequest>(&op)) {
    return {{"request_range", RangeJson(*range)}};
  }
  if (const auto* put = std::get_if<PutRequest>(&op)) {
    return {
        {"request_put", {{"key", Base64Encode(put->key)}, {"value", Base64Encode(put->value)}}}};
  }
  const auto& del = std::get<DeleteRequest>(op);
  Json j = {{"key", Base64Encode(del.key)}};
  if (!del.range_end.empty()) j["range_end"] = Base64Encode(del.range_end);
  return {{"request_delete_range", j}};
}

Json CompareJson(const Compare& c) {
  Json j = {
      {"key", Base64Encode(c.key)}, {"target", TargetName(c.target)}, {"result", OpName(c.op)}};
  switch (c.target) {
    case Compare::Target::kVersion:
      j["version"] = std::to_string(c.number);
      break;
    case Compare::Target::kCreate:
      j["create_revision"] = std::to_string(c.number);
      break;
    case Compare::Target::kMod:
      j["mod_revision"] = std::to_string(c.number);
      break;
    case Compare::Target::kValue:
      j["value"] = Base64Encode(c.value);
      break;
  }
  return j;
}

// An int64 member: a JSON string of digits (the gateway's form) or a number; 0 when absent.
Result<int64_t> Int64(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return int64_t{0};
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& text = it->get_ref<const std::string&>();
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
  }
  return Malformed(std::string("\"") + key + "\" is not an integer");
}

Result<bool> Bool(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return Malformed(std::string("\"") + key + "\" is not a boolean");
  return it->get<bool>();
}

Result<std::string> Bytes(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Malformed(std::string("\"") + key + "\" is not a string");
  auto decoded = Base64Decode(it->get_ref<const std::string&>());
  if (!decoded) return Malformed(std::string("\"") + key + "\" is not base64");
  return std::move(*decoded);
}

// The member `key` as an object; an empty object when absent.
Result<const Json*> Object(const Json& object, const char* key) {
  static const Json kEmpty = Json::object();
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return &kEmpty;
  if (!it->is_object()) return Malformed(std::string("\"") + key + "\" is not an object");
  return &*it;
}

Result<Json> ParseBody(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Malformed("not a JSON object");
  return j;
}

Result<int64_t> HeaderRevision(const Json& response) {
  NG_ASSIGN_OR_RETURN(const Json* header, Object(response, "header"));
  return Int64(*header, "revision");
}

Result<RangeResponse> RangeFromJson(const Json& j) {
  RangeResponse out;
  NG_ASSIGN_OR_RETURN(out.revision, HeaderRevision(j));
  NG_ASSIGN_OR_RETURN(out.count, Int64(j, "count"));
  NG_ASSIGN_OR_RETURN(out.more, Bool(j, "more"));
  const auto kvs = j.find("kvs");
  if (kvs != j.end() && !kvs->is_null()) {
    if (!kvs->is_array()) return Malformed("\"kvs\" is not a list");
    for (const Json& item : *kvs) {
      if (!item.is_object()) return Malformed("a key-value is not an object");
      KeyValue kv;
      NG_ASSIGN_OR_RETURN(kv.key, Bytes(item, "key"));
      NG_ASSIGN_OR_RETURN(kv.value, Bytes(item, "value"));
      NG_ASSIGN_OR_RETURN(kv.create_revision, Int64(item, "create_revision"));
      NG_ASSIGN_OR_RETURN(kv.mod_revision, Int64(item, "mod_revision"));
      NG_ASSIGN_OR_RETURN(kv.version, Int64(item, "version"));
      out.kvs.push_back(std::move(kv));
    }
  }
  return out;
}

}  // namespace

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string EncodeRange(const RangeRequest& request) { return RangeJson(request).dump(); }

std::string EncodeTxn(const TxnRequest& request) {
  Json j = Json::object();
  Json compare = Json::array();
  for (const auto& c : request.compare) compare.push_back(CompareJson(c));
  Json success = Json::array();
  for (const auto& op : request.success) success.push_back(OpJson(op));
  Json failure = Json::array();
  for (const auto& op : request.failure) failure.push_back(OpJson(op));
  j["compare"] = std::move(compare);
  j["success"] = std::move(success);
  j["failure"] = std::move(failure);
  return j.dump();
}

std::string EncodeAuthenticate(std::string_view name, std::string_view password) {
  return Json{{"name", std::string(name)}, {"password", std::string(password)}}.dump();
}

Result<RangeResponse> DecodeRangeResponse(std::string_view body) {
  NG_ASSIGN_OR_RETURN(Json j, ParseBody(body));
  return RangeFromJson(j);
}

Result<TxnResponse> DecodeTxnResponse(std::string_view body, const TxnRequest& request) {
  NG_ASSIGN_OR_RETURN(Json j, ParseBody(body));
  TxnResponse out;
  NG_ASSIGN_OR_RETURN(out.revision, HeaderRevision(j));
  NG_ASSIGN_OR_RETURN(out.succeeded, Bool(j, "succeeded"));
  const std::vector<Op>& ops = out.succeeded ? request.success : request.failure;
  const auto responses = j.find("responses");
  const bool have_list = responses != j.end() && !responses->is_null();
  if (have_list && !responses->is_array()) return Malformed("\"responses\" is not a list");
  const size_t count = have_list ? responses->size() : 0;
  if (count != ops.size()) {
    return Malformed(std::to_string(count) + " responses to a branch of " +
                     std::to_string(ops.size()) + " operations");
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const Json& item = (*responses)[i];
    if (!item.is_object()) return Malformed("a response is not an object");
    if (std::holds_alternative<RangeRequest>(ops[i])) {
      NG_ASSIGN_OR_RETURN(const Json* range, Object(item, "response_range"));
      NG_ASSIGN_OR_RETURN(RangeResponse r, RangeFromJson(*range));
      out.responses.emplace_back(std::move(r));
    } else if (std::holds_alternative<PutRequest>(ops[i])) {
      NG_ASSIGN_OR_RETURN(const Json* put, Object(item, "response_put"));
      PutResponse r;
      NG_ASSIGN_OR_RETURN(r.revision, HeaderRevision(*put));
      out.responses.emplace_back(r);
    } else {
      NG_ASSIGN_OR_RETURN(const Json* del, Object(item, "response_delete_range"));
      DeleteResponse r;
      NG_ASSIGN_OR_RETURN(r.revision, HeaderRevision(*del));
      NG_ASSIGN_OR_RETURN(r.deleted, Int64(*del, "deleted"));
      out.responses.emplace_back(r);
    }
  }
  return out;
}

Result<std::string> DecodeAuthenticateResponse(std::string_view body) {
  NG_ASSIGN_OR_RETURN(Json j, ParseBody(body));
  const auto token = j.find("token");
  if (token == j.end() || !token->is_string() || token->get_ref<const std::string&>().empty()) {
    return Malformed("authentication answered no token");
  }
  return token->get<std::string>();
}

bool GatewayError::retryable() const {
  if (code == static_cast<int>(GrpcCode::kUnavailable) ||
      code == static_cast<int>(GrpcCode::kDeadlineExceeded) ||
      code == static_cast<int>(GrpcCode::kResourceExhausted)) {
    return true;
  }
  // A proxy's or an overloaded member's 5xx without etcd's error body.
  return code < 0 && http_status >= 500;
}

bool GatewayError::unauthenticated() const {
  return code == static_cast<int>(GrpcCode::kUnauthenticated) ||
         message.find("invalid auth token") != std::string::npos;
}

GatewayError DecodeGatewayError(int http_status, std::string_view body) {
  GatewayError error;
  error.http_status = http_status;
  const Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (const auto code = j.find("code"); code != j.end() && code->is_number_integer()) {
      error.code = code->get<int>();
    }
    for (const char* key : {"error", "message"}) {
      if (const auto text = j.find(key); text != j.end() && text->is_string()) {
        error.message = text->get<std::string>();
        break;
      }
    }
  }
  if (error.message.empty()) {
    // Not etcd's error body: keep a short, printable start of it.
    std::string start(body.substr(0, 120));
    for (char& c : start) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = ' ';
    }
    error.message = "HTTP " + std::to_string(http_status) + (start.empty() ? "" : ": " + start);
  }
  return error;
}

}  // namespace nodegate::etcd
