#include "lib/cni/conf.h"

#include "lib/cni/version.h"
#include "lib/json/field.h"

namespace nodegate::cni {
namespace {

Error NetConfFieldMustBe(const json_field::FieldMismatch& mismatch) {
  return Error(kErrDecode, "error unmarshall network config: field \"" + std::string(mismatch.key) +
                               "\" must be " + mismatch.described());
}

Result<std::string> OptionalString(const Json& raw, const char* key) {
  return json_field::ReadString(raw, key).GetOr("", NetConfFieldMustBe);
}

Result<Json> OptionalObject(const Json& raw, const char* key) {
  NG_ASSIGN_OR_RETURN(const Json* object,
                      json_field::ReadObject(raw, key).GetOr(nullptr, NetConfFieldMustBe));
  return object != nullptr ? *object : Json::object();
}

}  // namespace

gojson::Shape NetConfShape(std::vector<gojson::Field> plugin_fields) {
  using gojson::Any;
  using gojson::Field;
  using gojson::ListOf;
  using gojson::Null;
  using gojson::Struct;
  const auto strings = ListOf(Any());
  std::vector<Field> base = {
      {"cniVersion", Any(), Null::kKeep},
      {"name", Any(), Null::kKeep},
      {"type", Any(), Null::kKeep},
      {"capabilities", gojson::MapOf(Any())},
      {"ipam", Struct({{"type", Any(), Null::kKeep}}), Null::kKeep},
      {"dns",
       Struct({{"nameservers", strings},
               {"domain", Any(), Null::kKeep},
               {"search", strings},
               {"options", strings}}),
       Null::kKeep},
      // A map[string]interface{} in the reference, folded later (DecodePrevResult).
      {"prevResult", gojson::MapOf(Any())},
      {"cni.dev/valid-attachments",
       ListOf(Struct({{"containerID", Any(), Null::kKeep}, {"ifname", Any(), Null::kKeep}}))},
      {"cni.dev/attachments",
       ListOf(Struct({{"containerID", Any(), Null::kKeep}, {"ifname", Any(), Null::kKeep}}))},
      // Ours: operator logging.
      {"logFile", Any(), Null::kKeep},
      {"logLevel", Any(), Null::kKeep},
  };
  return gojson::Embed({Struct(std::move(base))}, std::move(plugin_fields));
}

Result<NetConf> ParseNetConf(std::string_view stdin_bytes, const gojson::Shape& shape,
                             Strictness strictness) {
  auto decoded = gojson::Decode(stdin_bytes, shape, "error unmarshall network config");
  if (!decoded.ok()) {
    return decoded.error();
  }
  Json raw = std::move(decoded).value();
  if (!raw.is_object()) {
    return Error(kErrDecode, "error unmarshall network config: expected a JSON object");
  }
  NetConf conf;
  // What a DEL can do without: its error is noted and the field keeps its default.
  const auto optional = [&](auto& field, auto parsed) -> Status {
    if (parsed.ok()) {
      field = std::move(parsed).value();
      return OkStatus();
    }
    if (strictness == Strictness::kAll) return parsed.error();
    conf.unreadable.push_back(parsed.error().msg);
    return OkStatus();
  };
  NG_ASSIGN_OR_RETURN(conf.cni_version, OptionalString(raw, "cniVersion"));
  conf.cni_version = EffectiveVersion(conf.cni_version);
  NG_ASSIGN_OR_RETURN(conf.name, OptionalString(raw, "name"));
  NG_RETURN_IF_ERROR(optional(conf.type, OptionalString(raw, "type")));
  NG_RETURN_IF_ERROR(optional(conf.runtime_config, OptionalObject(raw, "runtimeConfig")));
  NG_RETURN_IF_ERROR(optional(conf.args, OptionalObject(raw, "args")));
  NG_RETURN_IF_ERROR(optional(conf.ipam, OptionalObject(raw, "ipam")));
  NG_RETURN_IF_ERROR(optional(conf.log_file, OptionalString(raw, "logFile")));
  NG_RETURN_IF_ERROR(optional(conf.log_level, OptionalString(raw, "logLevel")));
  if (const Json* prev_json = json_field::GivenField(raw, "prevResult")) {
    conf.prev_result_json = *prev_json;
    // An empty prevResult ({}) is "no result" for DEL (the spec allows it to be missing).
    // With an unsupported config version it stays undecoded: the dispatcher rejects the
    // version itself with code 1.
    Result<std::optional<CniResult>> prev = std::optional<CniResult>();
    if (!prev_json->is_object()) {
      prev = Error(kErrDecode, "error unmarshall network config: prevResult must be an object");
    } else if (!prev_json->empty() && FamilyOf(conf.cni_version).ok()) {
      auto decoded_prev = DecodePrevResult(*prev_json, conf.cni_version);
      if (decoded_prev.ok()) {
        prev = std::optional<CniResult>(std::move(decoded_prev).value());
      } else {
        prev = decoded_prev.error().WithContext("could not parse prevResult");
      }
    }
    NG_RETURN_IF_ERROR(optional(conf.prev_result, std::move(prev)));
  }
  conf.raw = std::move(raw);
  return conf;
}

Result<std::vector<Attachment>> ParseValidAttachments(const Json& raw) {
  std::vector<Attachment> out;
  // The older key counts only when the newer one is absent (a null newer key means none).
  const char* key = raw.contains("cni.dev/valid-attachments") ? "cni.dev/valid-attachments"
                                                              : "cni.dev/attachments";
  const auto list = json_field::ReadList(raw, key);
  if (list.mismatched()) {
    return Error(kErrDecode, "cni.dev/valid-attachments must be a list");
  }
  const Json* items = list.value_or(nullptr);
  if (items == nullptr) {
    return out;
  }
  for (const auto& item : *items) {
    const auto container_id = json_field::ReadString(item, "containerID");
    if (!container_id.given()) {
      return Error(kErrDecode, "each valid attachment needs a string \"containerID\"");
    }
    out.push_back({.container_id = *container_id.value(),
                   .ifname = json_field::StringOrEmpty(item, "ifname")});
  }
  return out;
}

}  // namespace nodegate::cni
