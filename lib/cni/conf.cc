#include "lib/cni/conf.h"

#include "lib/cni/version.h"

namespace nodegate::cni {
namespace {

Result<std::string> OptionalString(const Json& raw, const char* key) {
  auto it = raw.find(key);
  if (it == raw.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return Error(kErrDecode, std::string("error unmarshall network config: field \"") + key +
                                 "\" must be a string");
  }
  return it->get<std::string>();
}

Result<Json> OptionalObject(const Json& raw, const char* key) {
  auto it = raw.find(key);
  if (it == raw.end() || it->is_null()) {
    return Json::object();
  }
  if (!it->is_object()) {
    return Error(kErrDecode, std::string("error unmarshall network config: field \"") + key +
                                 "\" must be an object");
  }
  return *it;
}

}  // namespace

Result<NetConf> ParseNetConf(std::string_view stdin_bytes) {
  Json raw = Json::parse(stdin_bytes, nullptr, false);
  if (raw.is_discarded()) {
    return Error(kErrDecode, "error unmarshall network config: invalid JSON");
  }
  if (!raw.is_object()) {
    return Error(kErrDecode, "error unmarshall network config: expected a JSON object");
  }
  NetConf conf;
  NG_ASSIGN_OR_RETURN(conf.cni_version, OptionalString(raw, "cniVersion"));
  if (conf.cni_version.empty()) {
    conf.cni_version = "0.1.0";
  }
  NG_ASSIGN_OR_RETURN(conf.name, OptionalString(raw, "name"));
  NG_ASSIGN_OR_RETURN(conf.type, OptionalString(raw, "type"));
  NG_ASSIGN_OR_RETURN(conf.runtime_config, OptionalObject(raw, "runtimeConfig"));
  NG_ASSIGN_OR_RETURN(conf.args, OptionalObject(raw, "args"));
  NG_ASSIGN_OR_RETURN(conf.ipam, OptionalObject(raw, "ipam"));
  NG_ASSIGN_OR_RETURN(conf.log_file, OptionalString(raw, "logFile"));
  NG_ASSIGN_OR_RETURN(conf.log_level, OptionalString(raw, "logLevel"));
  if (auto it = raw.find("prevResult"); it != raw.end() && !it->is_null()) {
    if (!it->is_object()) {
      return Error(kErrDecode, "error unmarshall network config: prevResult must be an object");
    }
    conf.prev_result_json = *it;
    // An empty prevResult ({}) is "no result" for DEL (the spec allows it to be missing).
    // With an unsupported config version it stays undecoded: the dispatcher rejects the
    // version itself with code 1.
    if (!it->empty() && FamilyOf(conf.cni_version).ok()) {
      auto prev = DecodePrevResult(*it, conf.cni_version);
      if (!prev.ok()) {
        return prev.error().WithContext("could not parse prevResult");
      }
      conf.prev_result = std::move(prev).value();
    }
  }
  conf.raw = std::move(raw);
  return conf;
}

Result<std::vector<Attachment>> ParseValidAttachments(const Json& raw) {
  std::vector<Attachment> out;
  auto it = raw.find("cni.dev/valid-attachments");
  if (it == raw.end()) {
    it = raw.find("cni.dev/attachments");
  }
  if (it == raw.end() || it->is_null()) {
    return out;
  }
  if (!it->is_array()) {
    return Error(kErrDecode, "cni.dev/valid-attachments must be a list");
  }
  for (const auto& item : *it) {
    if (!item.is_object() || !item.contains("containerID") || !item["containerID"].is_string()) {
      return Error(kErrDecode, "each valid attachment needs a string \"containerID\"");
    }
    Attachment a;
    a.container_id = item["containerID"].get<std::string>();
    if (item.contains("ifname") && item["ifname"].is_string()) {
      a.ifname = item["ifname"].get<std::string>();
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace nodegate::cni
