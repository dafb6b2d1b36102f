#include "runtime/chain/chain.h"

#include <sys/stat.h>

#include <algorithm>

#include "lib/cni/skel.h"
#include "lib/cni/version.h"
#include "lib/json/field.h"

namespace nodegate::runtime {
namespace {

Error JoinErrors(const std::vector<Error>& errors) {
  if (errors.size() == 1) {
    return errors.front();
  }
  std::string msg;
  for (const auto& e : errors) {
    msg += (msg.empty() ? "" : "; ") + e.msg;
  }
  return Error(errors.front().code, msg);
}

std::string EffectiveVersion(const NetworkConfigList& list) {
  return cni::EffectiveVersion(list.cni_version);
}

// Values passed on may hold bytes from the command line (CNI_ARGS, a netns path): invalid UTF-8
// is replaced, as Go's encoder does, so dumping never throws.
std::string DumpJson(const cni::Json& j) {
  return j.dump(-1, ' ', false, cni::Json::error_handler_t::replace);
}

Result<cni::Json> EncodeAsJson(const cni::CniResult& result, const std::string& version) {
  NG_ASSIGN_OR_RETURN(cni::OrderedJson encoded, cni::EncodeResult(result, version));
  return cni::Json::parse(encoded.dump(-1, ' ', false, cni::Json::error_handler_t::replace));
}

}  // namespace

std::string JoinCniArgs(const std::vector<std::pair<std::string, std::string>>& args) {
  std::string out;
  for (const auto& [k, v] : args) {
    out += (out.empty() ? "" : ";") + k + "=" + v;
  }
  return out;
}

Result<std::string> BuildPluginConfig(const NetworkConfigList& list, const PluginConfig& plugin,
                                      const std::optional<cni::CniResult>& prev_result,
                                      const cni::Json& capability_args) {
  cni::Json conf = plugin.raw;
  conf["name"] = list.name;
  conf["cniVersion"] = list.cni_version;
  if (prev_result) {
    NG_ASSIGN_OR_RETURN(
        conf["prevResult"],
        EncodeAsJson(*prev_result, prev_result->cni_version.empty() ? EffectiveVersion(list)
                                                                    : prev_result->cni_version));
  }
  cni::Json runtime_config = cni::Json::object();
  for (const auto& [capability, enabled] : plugin.capabilities) {
    if (!enabled || !capability_args.is_object()) {
      continue;
    }
    if (auto it = capability_args.find(capability); it != capability_args.end()) {
      runtime_config[capability] = *it;
    }
  }
  if (!runtime_config.empty()) {
    conf["runtimeConfig"] = std::move(runtime_config);
  }
  return DumpJson(conf);
}

CniEnv Chain::Env(const std::string& command, const RuntimeConf& rt) const {
  std::string path;
  for (const auto& dir : options_.cni_path) {
    path += (path.empty() ? "" : ":") + dir;
  }
  return CniEnv{.command = command,
                .container_id = rt.container_id,
                .netns = rt.netns,
                .ifname = rt.ifname,
                .args = JoinCniArgs(rt.args),
                .path = path};
}

Result<cni::CniResult> Chain::Add(const NetworkConfigList& list, const RuntimeConf& rt) {
  NG_RETURN_IF_ERROR(cni::ValidateContainerId(rt.container_id));
  NG_RETURN_IF_ERROR(cni::ValidateNetworkName(list.name));
  NG_RETURN_IF_ERROR(cni::ValidateInterfaceName(rt.ifname));
  // Find every binary before running any, so a missing plugin fails before side effects.
  std::vector<std::string> binaries;
  for (const auto& plugin : list.plugins) {
    auto binary = exec_.FindInPath(plugin.type, options_.cni_path);
    if (!binary.ok()) {
      return binary.error().WithContext("plugin " + PluginDescription(plugin) + " failed (add)");
    }
    binaries.push_back(*binary);
  }
  std::optional<cni::CniResult> result;
  for (size_t i = 0; i < list.plugins.size(); ++i) {
    const auto& plugin = list.plugins[i];
    auto outcome = [&]() -> Result<cni::CniResult> {
      NG_ASSIGN_OR_RETURN(std::string stdin_data,
                          BuildPluginConfig(list, plugin, result, rt.capability_args));
      return ExecPluginWithResult(exec_, binaries[i], Env("ADD", rt), stdin_data,
                                  EffectiveVersion(list));
    }();
    if (!outcome.ok()) {
      const Error error =
          outcome.error().WithContext("plugin " + PluginDescription(plugin) + " failed (add)");
      // Runtimes always follow a failed ADD with DEL; do it now so nothing is left behind.
      (void)DelPlugins(list, rt, std::nullopt);
      return error;
    }
    result = std::move(outcome).value();
  }
  NG_ASSIGN_OR_RETURN(cni::Json raw_result, EncodeAsJson(*result, result->cni_version));
  CachedAttachment entry{.container_id = rt.container_id,
                         .network_name = list.name,
                         .ifname = rt.ifname,
                         .netns = rt.netns,
                         .config = list.bytes,
                         .cni_args = rt.args,
                         .capability_args = rt.capability_args,
                         .result = raw_result};
  if (auto status = WriteCacheEntry(options_.cache_dir, entry); !status.ok()) {
    (void)DelPlugins(list, rt, result);
    return status.error().WithContext("failed to set network \"" + list.name + "\" cached result");
  }
  return *result;
}

Result<std::optional<cni::CniResult>> Chain::CachedResult(const NetworkConfigList& list,
                                                          const RuntimeConf& rt) const {
  NG_ASSIGN_OR_RETURN(auto entry,
                      ReadCacheEntry(options_.cache_dir, list.name, rt.container_id, rt.ifname));
  if (!entry || !entry->result.is_object() || entry->result.empty()) {
    return std::optional<cni::CniResult>();
  }
  // The cached result is a map to libcni; it reaches the result struct after a marshal.
  auto decoded = cni::DecodeResult(cni::gojson::Refold(entry->result, cni::ResultShape()),
                                   EffectiveVersion(list));
  if (!decoded.ok()) {
    return decoded.error().WithContext("cached result of network \"" + list.name + "\"");
  }
  // Convert to the list's version, so plugins get prevResult in their config's version.
  const std::string version = EffectiveVersion(list);
  NG_ASSIGN_OR_RETURN(cni::OrderedJson encoded, cni::EncodeResult(*decoded, version));
  auto converted = cni::DecodeResult(
      cni::Json::parse(encoded.dump(-1, ' ', false, cni::Json::error_handler_t::replace)), version);
  if (!converted.ok()) {
    return converted.error().WithContext("failed to convert cached result to config version \"" +
                                         version + "\"");
  }
  return std::optional<cni::CniResult>(std::move(converted).value());
}

RuntimeConf Chain::WithCachedArgs(const NetworkConfigList& list, const RuntimeConf& rt) const {
  RuntimeConf out = rt;
  auto entry = ReadCacheEntry(options_.cache_dir, list.name, rt.container_id, rt.ifname);
  if (!entry.ok() || !entry->has_value()) {
    return out;
  }
  const CachedAttachment& cached = **entry;
  if ((!out.capability_args.is_object() || out.capability_args.empty()) &&
      cached.capability_args.is_object()) {
    out.capability_args = cached.capability_args;
  }
  if (out.args.empty()) {
    out.args = cached.cni_args;
  }
  if (out.netns.empty()) {
    out.netns = cached.netns;
  }
  // libcni before 1.2 (podman 4.x) caches no "netns": the result's sandbox of our interface
  // names it.
  if (out.netns.empty() && cached.result.is_object()) {
    // A cache file may hold anything: only string fields count (value() would throw).
    auto interfaces = cached.result.find("interfaces");
    if (interfaces != cached.result.end() && interfaces->is_array()) {
      for (const auto& iface : *interfaces) {
        if (iface.is_object() && json_field::StringOrEmpty(iface, "name") == rt.ifname &&
            !json_field::StringOrEmpty(iface, "sandbox").empty()) {
          out.netns = json_field::StringOrEmpty(iface, "sandbox");
          break;
        }
      }
    }
  }
  return out;
}

Status Chain::DelPlugins(const NetworkConfigList& list, const RuntimeConf& rt,
                         const std::optional<cni::CniResult>& prev) {
  std::vector<Error> errors;
  for (size_t i = list.plugins.size(); i-- > 0;) {
    const auto& plugin = list.plugins[i];
    auto status = [&]() -> Status {
      NG_ASSIGN_OR_RETURN(std::string binary, exec_.FindInPath(plugin.type, options_.cni_path));
      NG_ASSIGN_OR_RETURN(std::string stdin_data,
                          BuildPluginConfig(list, plugin, prev, rt.capability_args));
      return ExecPluginWithoutResult(exec_, binary, Env("DEL", rt), stdin_data);
    }();
    if (!status.ok()) {
      errors.push_back(
          status.error().WithContext("plugin " + PluginDescription(plugin) + " failed (delete)"));
    }
  }
  if (!errors.empty()) {
    return JoinErrors(errors);
  }
  return OkStatus();
}

Status Chain::Del(const NetworkConfigList& list, const RuntimeConf& rt) {
  NG_RETURN_IF_ERROR(cni::ValidateContainerId(rt.container_id));
  NG_RETURN_IF_ERROR(cni::ValidateInterfaceName(rt.ifname));
  std::optional<cni::CniResult> cached;
  // The cached result goes to DEL only from 0.4.0 on; an unreadable cache is dropped.
  if (cni::VersionAtLeast(EffectiveVersion(list), "0.4.0")) {
    auto result = CachedResult(list, rt);
    if (result.ok()) {
      cached = std::move(result).value();
    }
  }
  NG_RETURN_IF_ERROR(DelPlugins(list, rt, cached));
  return DeleteCacheEntry(options_.cache_dir, list.name, rt.container_id, rt.ifname);
}

Status Chain::Check(const NetworkConfigList& list, const RuntimeConf& rt) {
  const std::string version = EffectiveVersion(list);
  if (!cni::VersionAtLeast(version, "0.4.0")) {
    return Error(kErrIncompatibleVersion,
                 "configuration version \"" + version + "\" does not support the CHECK command");
  }
  if (list.disable_check) {
    return OkStatus();
  }
  NG_ASSIGN_OR_RETURN(auto cached, CachedResult(list, rt));
  if (!cached) {
    return Error(kErrUnknownContainer, "no cached result for network \"" + list.name +
                                           "\", container \"" + rt.container_id +
                                           "\", interface \"" + rt.ifname + "\" (was ADD run?)");
  }
  for (const auto& plugin : list.plugins) {
    auto status = [&]() -> Status {
      NG_ASSIGN_OR_RETURN(std::string binary, exec_.FindInPath(plugin.type, options_.cni_path));
      NG_ASSIGN_OR_RETURN(std::string stdin_data,
                          BuildPluginConfig(list, plugin, cached, rt.capability_args));
      return ExecPluginWithoutResult(exec_, binary, Env("CHECK", rt), stdin_data);
    }();
    if (!status.ok()) {
      return status.error().WithContext("plugin " + PluginDescription(plugin) + " failed (check)");
    }
  }
  return OkStatus();
}

Status Chain::Gc(const NetworkConfigList& list, const std::vector<cni::Attachment>& valid) {
  if (list.disable_gc) {
    return OkStatus();
  }
  std::vector<Error> errors;
  for (const auto& cached : ListCachedAttachments(options_.cache_dir)) {
    if (cached.network_name != list.name) {
      continue;
    }
    const cni::Attachment key{cached.container_id, cached.ifname};
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) {
      continue;
    }
    RuntimeConf rt{.container_id = cached.container_id,
                   .netns = cached.netns,
                   .ifname = cached.ifname,
                   .args = cached.cni_args,
                   .capability_args = cached.capability_args};
    if (auto status = Del(list, rt); !status.ok()) {
      errors.push_back(status.error().WithContext("failed to delete stale attachment " +
                                                  cached.container_id + " " + cached.ifname));
    }
  }
  if (cni::VersionAtLeast(EffectiveVersion(list), "1.1.0")) {
    cni::Json attachments = cni::Json::array();
    for (const auto& a : valid) {
      attachments.push_back({{"containerID", a.container_id}, {"ifname", a.ifname}});
    }
    for (const auto& plugin : list.plugins) {
      auto status = [&]() -> Status {
        NG_ASSIGN_OR_RETURN(std::string binary, exec_.FindInPath(plugin.type, options_.cni_path));
        cni::Json conf = plugin.raw;
        conf["name"] = list.name;
        conf["cniVersion"] = list.cni_version;
        conf["cni.dev/valid-attachments"] = attachments;
        conf["cni.dev/attachments"] = attachments;
        return ExecPluginWithoutResult(exec_, binary, Env("GC", RuntimeConf{}), DumpJson(conf));
      }();
      if (!status.ok()) {
        errors.push_back(status.error().WithContext("failed to GC plugin " + plugin.type));
      }
    }
  }
  if (!errors.empty()) {
    return JoinErrors(errors);
  }
  return OkStatus();
}

Result<StatusOutcome> Chain::GetStatus(const NetworkConfigList& list) {
  if (!cni::VersionAtLeast(EffectiveVersion(list), "1.1.0")) {
    return StatusOutcome::kNotSupportedByVersion;
  }
  for (const auto& plugin : list.plugins) {
    NG_ASSIGN_OR_RETURN(std::string binary, exec_.FindInPath(plugin.type, options_.cni_path));
    cni::Json conf = plugin.raw;
    conf["name"] = list.name;
    conf["cniVersion"] = list.cni_version;
    auto status =
        ExecPluginWithoutResult(exec_, binary, Env("STATUS", RuntimeConf{}), DumpJson(conf));
    if (!status.ok()) {
      return status.error().WithContext("plugin " + PluginDescription(plugin) + " (status)");
    }
  }
  return StatusOutcome::kAvailable;
}

std::vector<cni::Attachment> Chain::LiveAttachments(const std::string& network) const {
  std::vector<cni::Attachment> out;
  for (const auto& cached : ListCachedAttachments(options_.cache_dir)) {
    if (cached.network_name != network) {
      continue;
    }
    struct stat st {};
    if (!cached.netns.empty() && ::stat(cached.netns.c_str(), &st) == 0) {
      out.push_back({cached.container_id, cached.ifname});
    }
  }
  return out;
}

}  // namespace nodegate::runtime
