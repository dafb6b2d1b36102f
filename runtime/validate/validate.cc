#include "runtime/validate/validate.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>

#include "lib/cni/go_json.h"
#include "lib/cni/skel.h"
#include "lib/cni/version.h"
#include "lib/json/field.h"
#include "lib/net/ip.h"
#include "lib/sys/io.h"
#include "runtime/chain/chain.h"
#include "runtime/conflist/conflist.h"

namespace nodegate::runtime {
namespace {

using cni::Json;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    out += (out.empty() ? "" : " ") + i;
  }
  return out;
}

// Per-run state: findings go to the report, VERSION answers are asked once per binary.
class Validator {
 public:
  Validator(const ValidateOptions& options, Report& report) : options_(options), report_(report) {}

  void ValidatePath(const std::string& path);

 private:
  struct Loaded {
    std::string file;
    NetworkConfigList list;
    Json canonical;  // the parsed file, for comparing duplicates
  };

  void Add(Severity severity, const std::string& file, const std::string& network, int plugin,
           const std::string& type, const std::string& check, const std::string& message) {
    report_.findings.push_back(Finding{severity, file, network, plugin, type, check, message});
  }

  std::optional<Loaded> ValidateFile(const std::string& file);
  void ValidatePlugin(const Loaded& loaded, size_t index);
  void CheckBinary(const Loaded& loaded, int index, const std::string& type, const char* role);
  void CheckFolder(const std::vector<Loaded>& loaded);
  Result<std::vector<std::string>> Versions(const std::string& binary);

  const ValidateOptions& options_;
  Report& report_;
  std::map<std::string, Result<std::vector<std::string>>> versions_;
};

void Validator::ValidatePath(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    report_.unusable_input = true;
    Add(Severity::kError, path, "", -1, "", "read", "no such file or folder");
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    report_.files.push_back(path);
    if (auto loaded = ValidateFile(path)) {
      CheckFolder({*loaded});
    }
    return;
  }
  auto files = ConfFilesInLoadOrder(path);
  if (!files.ok()) {
    report_.unusable_input = true;
    Add(Severity::kError, path, "", -1, "", "read", files.error().msg);
    return;
  }
  if (files->empty()) {
    Add(Severity::kWarning, path, "", -1, "", "read",
        "no configuration files (*.conflist, *.conf, *.json): a runtime finds no network here");
    return;
  }
  std::vector<Loaded> loaded;
  for (const auto& file : *files) {
    report_.files.push_back(file);
    if (auto l = ValidateFile(file)) {
      loaded.push_back(std::move(*l));
    }
  }
  CheckFolder(loaded);
}

std::optional<Validator::Loaded> Validator::ValidateFile(const std::string& file) {
  auto bytes = sys::ReadRegularFile(file, kMaxConfFileBytes);
  if (!bytes.ok()) {
    Add(Severity::kError, file, "", -1, "", "read", bytes.error().msg);
    return std::nullopt;
  }
  // Decoded as libcni's Go decoder does: invalid UTF-8 becomes U+FFFD, nesting deeper than
  // Go's limit and numbers past a double's range are errors (with line and column).
  auto decoded = cni::gojson::Decode(*bytes, cni::gojson::Any(), "invalid JSON");
  if (!decoded.ok()) {
    Add(Severity::kError, file, "", -1, "", "json",
        decoded.error().msg +
            "; libcni stops loading at a broken file, so networks in later files fail too");
    return std::nullopt;
  }
  Json parsed = std::move(decoded).value();
  if (!parsed.is_object()) {
    Add(Severity::kError, file, "", -1, "", "json", "the file must hold one JSON object");
    return std::nullopt;
  }
  const bool is_list = EndsWith(file, ".conflist");
  std::string name = json_field::StringOrEmpty(parsed, "name");
  auto list = is_list ? ParseConfList(*bytes) : ParseSingleConf(*bytes);
  if (!list.ok()) {
    Add(Severity::kError, file, name, -1, "", "format", list.error().msg);
    return std::nullopt;
  }
  list->source = file;
  Loaded loaded{file, std::move(list).value(), parsed};
  const NetworkConfigList& l = loaded.list;
  if (!is_list) {
    Add(Severity::kWarning, file, l.name, -1, "", "format",
        "single-plugin configuration: deprecated since spec 1.0 and only loaded as a fallback "
        "after every .conflist; write it as a .conflist with one plugin");
  }
  if (auto status = cni::ValidateNetworkName(l.name); !status.ok()) {
    Add(Severity::kError, file, l.name, -1, "", "name",
        status.error().msg + (l.name.empty() ? "" : ": \"" + l.name + "\""));
  }
  if (!parsed.contains("cniVersion") && !parsed.contains("cniVersions")) {
    Add(Severity::kWarning, file, l.name, -1, "", "version",
        "no cniVersion: runtimes and plugins treat it as 0.1.0 (no CHECK, GC or STATUS)");
  } else if (!Contains(cni::AllVersions(), cni::EffectiveVersion(l.cni_version))) {
    Add(Severity::kError, file, l.name, -1, "", "version",
        "cniVersion \"" + l.cni_version + "\" is not a CNI spec version (" +
            JoinList(cni::AllVersions()) + ")");
  }
  for (size_t i = 0; i < l.plugins.size(); ++i) {
    ValidatePlugin(loaded, i);
  }
  report_.networks.push_back(NetworkSummary{l.name, file, l.cni_version, {}, ""});
  for (const auto& p : l.plugins) {
    report_.networks.back().plugin_types.push_back(p.type);
  }
  return loaded;
}

Result<std::vector<std::string>> Validator::Versions(const std::string& binary) {
  auto it = versions_.find(binary);
  if (it == versions_.end()) {
    it = versions_.emplace(binary, GetVersionInfo(*options_.exec, binary)).first;
  }
  return it->second;
}

void Validator::CheckBinary(const Loaded& loaded, int index, const std::string& type,
                            const char* role) {
  if (options_.exec == nullptr) {
    return;
  }
  const auto& l = loaded.list;
  auto binary = options_.exec->FindInPath(type, options_.cni_path);
  if (!binary.ok()) {
    Add(Severity::kError, loaded.file, l.name, index, type, "plugin-path",
        std::string(role) + ": " + binary.error().msg);
    return;
  }
  auto versions = Versions(*binary);
  if (!versions.ok()) {
    Add(Severity::kError, loaded.file, l.name, index, type, "plugin-version",
        std::string(role) + " " + *binary + " did not answer VERSION: " + versions.error().msg);
    return;
  }
  const std::string wanted = cni::EffectiveVersion(l.cni_version);
  if (!Contains(*versions, wanted)) {
    Add(Severity::kError, loaded.file, l.name, index, type, "plugin-version",
        std::string(role) + " " + *binary + " does not support cniVersion \"" + wanted +
            "\" (it supports " + JoinList(*versions) + ")");
  }
}

void Validator::ValidatePlugin(const Loaded& loaded, size_t index) {
  const auto& l = loaded.list;
  const PluginConfig& plugin = l.plugins[index];
  const int i = static_cast<int>(index);
  if (plugin.type.find('/') != std::string::npos) {
    Add(Severity::kError, loaded.file, l.name, i, plugin.type, "format",
        "\"type\" is a binary name looked up in the plugin path; it cannot contain '/'");
    return;
  }
  CheckBinary(loaded, i, plugin.type, "plugin");
  std::string ipam_type;
  if (auto ipam = plugin.raw.find("ipam"); ipam != plugin.raw.end() && ipam->is_object()) {
    if (auto t = ipam->find("type"); t != ipam->end() && t->is_string()) {
      ipam_type = t->get<std::string>();
      if (ipam_type.find('/') != std::string::npos) {
        Add(Severity::kError, loaded.file, l.name, i, plugin.type, "format",
            "ipam \"type\" cannot contain '/'");
        ipam_type.clear();
      } else {
        CheckBinary(loaded, i, ipam_type, "IPAM plugin");
      }
    }
  }
  for (const auto& [capability, enabled] : plugin.capabilities) {
    if (!Contains(KnownCapabilities(), capability)) {
      Add(Severity::kWarning, loaded.file, l.name, i, plugin.type, "capabilities",
          "capability \"" + capability + "\" is not defined by the CNI conventions (" +
              JoinList(KnownCapabilities()) + "): no runtime will pass it");
    }
  }
  if (index == 0 && Contains(ChainedOnlyPlugins(), plugin.type)) {
    Add(Severity::kError, loaded.file, l.name, i, plugin.type, "chain",
        plugin.type +
            " needs the result of a main plugin (prevResult): place it after the "
            "plugin that creates the interface");
  }
  // Our plugins: the request config exactly as a runtime builds it, through the same
  // validation the plugin runs before it touches anything.
  auto run = [&](const std::string& type, const char* role) {
    auto it = options_.validators.find(type);
    if (it == options_.validators.end()) {
      return;
    }
    auto stdin_data = BuildPluginConfig(l, plugin, std::nullopt, Json::object());
    if (!stdin_data.ok()) {
      Add(Severity::kError, loaded.file, l.name, i, plugin.type, "plugin-config",
          stdin_data.error().msg);
      return;
    }
    Status status = it->second(*stdin_data);
    if (!status.ok()) {
      std::string msg = std::string(role) + " " + type + ": " + status.error().msg;
      if (!status.error().details.empty()) {
        msg += " (" + status.error().details + ")";
      }
      // Ranges may come from the runtime through the ipRanges capability instead.
      const auto ranges = plugin.capabilities.find("ipRanges");
      const bool runtime_ranges = ranges != plugin.capabilities.end() && ranges->second &&
                                  status.error().msg.find("no IP ranges") != std::string::npos;
      Add(runtime_ranges ? Severity::kWarning : Severity::kError, loaded.file, l.name, i,
          plugin.type, "plugin-config",
          runtime_ranges ? msg + "; fine only if the runtime always passes ipRanges" : msg);
    }
  };
  run(plugin.type, "plugin");
  if (!ipam_type.empty()) {
    run(ipam_type, "IPAM plugin");
  }
}

// host-local style subnets of a plugin's ipam section ("subnet" and "ranges").
std::vector<net::IpPrefix> Subnets(const PluginConfig& plugin) {
  std::vector<net::IpPrefix> out;
  auto ipam = plugin.raw.find("ipam");
  if (ipam == plugin.raw.end() || !ipam->is_object()) {
    return out;
  }
  auto add = [&](const Json& obj) {
    if (obj.is_object() && obj.contains("subnet") && obj["subnet"].is_string()) {
      if (auto p = net::IpPrefix::Parse(obj["subnet"].get<std::string>())) {
        out.push_back(p->Masked());
      }
    }
  };
  add(*ipam);
  if (auto ranges = ipam->find("ranges"); ranges != ipam->end() && ranges->is_array()) {
    for (const auto& set : *ranges) {
      if (set.is_array()) {
        for (const auto& r : set) {
          add(r);
        }
      }
    }
  }
  return out;
}

void Validator::CheckFolder(const std::vector<Loaded>& loaded) {
  std::map<std::string, const Loaded*> winners;
  std::vector<const Loaded*> ordered_winners;
  for (const auto& l : loaded) {
    auto [it, inserted] = winners.emplace(l.list.name, &l);
    if (inserted) {
      ordered_winners.push_back(&l);
      continue;
    }
    const Loaded& winner = *it->second;
    for (auto& summary : report_.networks) {
      if (summary.file == l.file) {
        summary.shadowed_by = winner.file;
      }
    }
    const std::string order =
        " (runtimes read every .conflist before any .conf/.json, each in name order; the "
        "first file with the name wins)";
    if (winner.canonical == l.canonical) {
      Add(Severity::kWarning, l.file, l.list.name, -1, "", "duplicate",
          "network \"" + l.list.name + "\" is also defined, identically, in " + winner.file +
              ", which wins" + order);
    } else {
      Add(Severity::kError, l.file, l.list.name, -1, "", "duplicate",
          "network \"" + l.list.name + "\" conflicts with the different definition in " +
              winner.file + ", which wins: this file is never used" + order);
    }
  }
  // Separate host-local stores handing out the same addresses: duplicates on the wire.
  for (size_t a = 0; a < ordered_winners.size(); ++a) {
    for (size_t b = a + 1; b < ordered_winners.size(); ++b) {
      for (const auto& pa : ordered_winners[a]->list.plugins) {
        for (const auto& pb : ordered_winners[b]->list.plugins) {
          for (const auto& sa : Subnets(pa)) {
            for (const auto& sb : Subnets(pb)) {
              if (sa.Overlaps(sb)) {
                Add(Severity::kWarning, ordered_winners[b]->file, ordered_winners[b]->list.name, -1,
                    "", "subnet",
                    "allocates from " + sb.ToString() + ", which overlaps " + sa.ToString() +
                        " of network \"" + ordered_winners[a]->list.name + "\" (" +
                        ordered_winners[a]->file +
                        "): separate IPAM stores can hand out the same address twice");
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& KnownCapabilities() {
  static const std::vector<std::string> kKnown = {"portMappings",
                                                  "bandwidth",
                                                  "ipRanges",
                                                  "ips",
                                                  "mac",
                                                  "dns",
                                                  "infinibandGUID",
                                                  "deviceID",
                                                  "aliases",
                                                  "cgroupPath",
                                                  "io.kubernetes.cri.pod-annotations"};
  return kKnown;
}

const std::vector<std::string>& ChainedOnlyPlugins() {
  static const std::vector<std::string> kChained = {"portmap", "bandwidth", "firewall", "tuning",
                                                    "sbr"};
  return kChained;
}

Report ValidatePaths(const std::vector<std::string>& paths, const ValidateOptions& options) {
  Report report;
  Validator validator(options, report);
  for (const auto& path : paths) {
    validator.ValidatePath(path);
  }
  return report;
}

}  // namespace nodegate::runtime
