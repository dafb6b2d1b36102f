#include "runtime/conflist/conflist.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/cni/conf.h"
#include "lib/cni/version.h"
#include "lib/json/field.h"
#include "lib/sys/io.h"

namespace nodegate::runtime {
namespace {

Error ConfigError(const std::string& msg) { return Error(kErrInvalidConfig, msg); }

// libcni accepts booleans and the strings "true"/"false" (any case) for list-level flags. It
// reads the list as a map, so a null is a value of the wrong type, here and below.
Result<bool> ReadFlag(const Json& list, const char* key) {
  const auto flag = json_field::ReadBool(list, key, json_field::NullIs::kMismatch);
  if (!flag.mismatched()) {
    return flag.value_or(false);
  }
  if (const Json& value = *flag.mismatch().found; value.is_string()) {
    std::string s = value.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "true") {
      return true;
    }
    if (s == "false") {
      return false;
    }
    return ConfigError("error parsing configuration list: invalid value \"" + s + "\" for " + key);
  }
  return ConfigError(std::string("error parsing configuration list: invalid type for ") + key);
}

// The highest entry of "cniVersions" (and "cniVersion") that is not above our spec version.
Result<std::string> EffectiveVersion(const Json& list, std::string version) {
  const auto versions = json_field::ReadList(list, "cniVersions", json_field::NullIs::kMismatch);
  if (versions.mismatched()) {
    return ConfigError("error parsing configuration list: invalid type for cniVersions");
  }
  const Json* entries = versions.value_or(nullptr);
  if (entries == nullptr) {
    return version;
  }
  std::vector<std::string> candidates;
  const auto current = *cni::ParseVersion(kRuntimeSpecVersion);
  for (size_t i = 0; i < entries->size(); ++i) {
    // Checked one by one: an entry before a non-string is judged first.
    const Json& v = (*entries)[i];
    if (!v.is_string()) {
      return ConfigError("error parsing configuration list: invalid type for cniVersions index " +
                         std::to_string(i));
    }
    auto parsed = cni::ParseVersion(v.get<std::string>());
    if (!parsed.ok()) {
      return ConfigError("error parsing configuration list: invalid cniVersions entry " +
                         v.get<std::string>() + " at index " + std::to_string(i));
    }
    if (*parsed <= current) {
      candidates.push_back(v.get<std::string>());
    }
  }
  if (!version.empty()) {
    auto parsed = cni::ParseVersion(version);
    if (!parsed.ok()) {
      return ConfigError("error parsing configuration list: invalid cniVersion " + version);
    }
    if (*parsed <= current) {
      candidates.push_back(version);
    }
  }
  // The highest candidate wins; with no candidate the "cniVersion" stays as written.
  std::string best;
  for (const auto& c : candidates) {
    if (best.empty() || cni::VersionAtLeast(c, best)) {
      best = c;
    }
  }
  return best.empty() ? version : best;
}

Result<PluginConfig> ParsePlugin(const Json& raw, const std::string& where) {
  if (!raw.is_object()) {
    return ConfigError(where + ": must be a JSON object");
  }
  PluginConfig plugin;
  plugin.raw = raw;  // passed on as it is, as libcni passes the plugin's bytes
  // libcni reads the plugin's type and capabilities through types.NetConf: keys as Go reads
  // them, after the list was decoded into a map (so in sorted key order).
  const Json conf = cni::gojson::Refold(raw, cni::NetConfShape());
  plugin.type = json_field::StringOrEmpty(conf, "type");
  if (plugin.type.empty()) {
    return ConfigError(where + ": missing 'type'");
  }
  const auto caps = json_field::ReadObject(conf, "capabilities");
  if (caps.mismatched()) {
    return ConfigError(where + ": 'capabilities' must be an object of booleans");
  }
  if (caps.given()) {
    for (const auto& [name, enabled] : (*caps.value())->items()) {
      if (!enabled.is_boolean()) {
        return ConfigError(where + ": capability \"" + name + "\" must be true or false");
      }
      plugin.capabilities[name] = enabled.get<bool>();
    }
  }
  return plugin;
}

// libcni decodes a list into map[string]interface{}: its top-level keys are exact.
Result<Json> ParseObject(std::string_view bytes, const char* what) {
  auto decoded = cni::gojson::Decode(bytes, cni::gojson::Any());
  if (!decoded.ok()) {
    return ConfigError(std::string("error parsing ") + what + ": invalid JSON");
  }
  Json raw = std::move(decoded).value();
  if (!raw.is_object()) {
    return ConfigError(std::string("error parsing ") + what + ": expected a JSON object");
  }
  return raw;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<NetworkConfigList> ParseConfList(std::string_view bytes) {
  NG_ASSIGN_OR_RETURN(Json raw, ParseObject(bytes, "configuration list"));
  NetworkConfigList list;
  list.bytes = std::string(bytes);
  const auto name = json_field::ReadString(raw, "name", json_field::NullIs::kMismatch);
  if (!name.present()) {
    return ConfigError("error parsing configuration list: no name");
  }
  if (name.mismatched()) {
    return ConfigError("error parsing configuration list: invalid name type");
  }
  list.name = *name.value();
  const auto version = json_field::ReadString(raw, "cniVersion", json_field::NullIs::kMismatch);
  if (version.mismatched()) {
    return ConfigError("error parsing configuration list: invalid cniVersion type");
  }
  list.cni_version = version.value_or("");
  NG_ASSIGN_OR_RETURN(list.cni_version, EffectiveVersion(raw, list.cni_version));
  NG_ASSIGN_OR_RETURN(list.disable_check, ReadFlag(raw, "disableCheck"));
  NG_ASSIGN_OR_RETURN(list.disable_gc, ReadFlag(raw, "disableGC"));
  const auto plugin_list = json_field::ReadList(raw, "plugins", json_field::NullIs::kMismatch);
  if (!plugin_list.present()) {
    return ConfigError("error parsing configuration list: no 'plugins' key");
  }
  if (plugin_list.mismatched()) {
    return ConfigError("error parsing configuration list: invalid 'plugins' type");
  }
  const Json* plugins = *plugin_list.value();
  if (plugins->empty()) {
    return ConfigError("error parsing configuration list: no plugins in list");
  }
  for (size_t i = 0; i < plugins->size(); ++i) {
    NG_ASSIGN_OR_RETURN(PluginConfig plugin,
                        ParsePlugin((*plugins)[i], "plugin " + std::to_string(i)));
    list.plugins.push_back(std::move(plugin));
  }
  return list;
}

Result<NetworkConfigList> ParseSingleConf(std::string_view bytes) {
  NG_ASSIGN_OR_RETURN(Json raw, ParseObject(bytes, "configuration"));
  NG_ASSIGN_OR_RETURN(PluginConfig plugin, ParsePlugin(raw, "error parsing configuration"));
  const std::string name = json_field::StringOrEmpty(raw, "name");
  const std::string version = json_field::StringOrEmpty(raw, "cniVersion");
  // nlohmann::json keeps object keys sorted, which is also Go's map marshalling order.
  Json upconverted = {{"cniVersion", version}, {"name", name}, {"plugins", Json::array({raw})}};
  NG_ASSIGN_OR_RETURN(NetworkConfigList list, ParseConfList(upconverted.dump()));
  list.upconverted = true;
  return list;
}

Result<NetworkConfigList> LoadConfFile(const std::string& path) {
  NG_ASSIGN_OR_RETURN(std::string bytes, sys::ReadRegularFile(path, kMaxConfFileBytes));
  auto list = EndsWith(path, ".conflist") ? ParseConfList(bytes) : ParseSingleConf(bytes);
  if (!list.ok()) {
    return list.error().WithContext(path);
  }
  list->source = path;
  return list;
}

Result<std::vector<std::string>> ConfFiles(const std::string& dir,
                                           const std::vector<std::string>& extensions) {
  std::vector<std::string> files;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) {
      return files;
    }
    return Error(kErrIo, "cannot read folder " + dir + ": " + std::strerror(errno));
  }
  while (const dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      continue;
    }
    const auto dot = name.rfind('.');
    if (dot == std::string::npos) {
      continue;
    }
    const std::string ext = name.substr(dot);
    if (std::find(extensions.begin(), extensions.end(), ext) != extensions.end()) {
      files.push_back(full);
    }
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::vector<std::string>> ConfFilesInLoadOrder(const std::string& dir) {
  NG_ASSIGN_OR_RETURN(auto lists, ConfFiles(dir, {".conflist"}));
  NG_ASSIGN_OR_RETURN(auto singles, ConfFiles(dir, {".conf", ".json"}));
  lists.insert(lists.end(), singles.begin(), singles.end());
  return lists;
}

Result<NetworkConfigList> LoadNetwork(const std::string& dir, const std::string& name) {
  NG_ASSIGN_OR_RETURN(auto files, ConfFilesInLoadOrder(dir));
  if (files.empty()) {
    return Error(kErrInvalidConfig, "no net configurations found in " + dir);
  }
  for (const auto& file : files) {
    NG_ASSIGN_OR_RETURN(NetworkConfigList list, LoadConfFile(file));
    if (list.name == name) {
      return list;
    }
  }
  return Error(kErrInvalidConfig, "no net configuration with name \"" + name + "\" in " + dir);
}

std::string PluginDescription(const PluginConfig& plugin) {
  std::string out = "type=\"" + plugin.type + "\"";
  if (const std::string name = json_field::StringOrEmpty(plugin.raw, "name"); !name.empty()) {
    out += " name=\"" + name + "\"";
  }
  return out;
}

}  // namespace nodegate::runtime
