#pragma once
// Network configuration lists as a runtime loads them: parsing a `.conflist` (or upconverting a
// single-plugin `.conf`/`.json`), the effective cniVersion (`cniVersions` handled as libcni
// does), and finding a network by name in a folder with libcni's file ordering:
//
//   1. every `*.conflist` in the folder, sorted by byte value of the file name; first whose
//      "name" matches wins;
//   2. then every `*.conf` and `*.json`, sorted the same way (deprecated single-plugin files,
//      upconverted to a one-plugin list).
//
//   NG_ASSIGN_OR_RETURN(auto list, LoadNetwork("/etc/cni/net.d", "podman"));
//   for (const auto& plugin : list.plugins) { ... plugin.type ... }

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/types.h"

namespace nodegate::runtime {

using cni::Json;

// One entry of "plugins": the object as written, plus the keys the runtime itself reads.
struct PluginConfig {
  Json raw = Json::object();
  std::string type;
  std::map<std::string, bool> capabilities;
};

struct NetworkConfigList {
  std::string name;
  std::string cni_version;  // effective version after "cniVersions"; "" stays "" (means 0.1.0)
  bool disable_check = false;
  bool disable_gc = false;
  std::vector<PluginConfig> plugins;
  std::string bytes;         // the list as libcni caches it (file bytes, or the upconverted list)
  std::string source;        // file it came from, "" for in-memory input
  bool upconverted = false;  // came from a single-plugin .conf/.json file
};

// Configuration files are read whole, as libcni does, but never more than this: a file that is
// not a regular file (a FIFO, a link to /dev/zero) or is larger is an error naming it.
inline constexpr size_t kMaxConfFileBytes = size_t{16} << 20;

// The spec version this runtime side implements; "cniVersions" entries above it are skipped.
inline constexpr std::string_view kRuntimeSpecVersion = "1.1.0";

// Parses a network configuration list. Errors (code 7) name the key that is wrong.
Result<NetworkConfigList> ParseConfList(std::string_view bytes);

// Parses a single-plugin configuration and upconverts it to a one-plugin list, building the
// list bytes as libcni does ({"cniVersion","name","plugins":[<the object>]}).
Result<NetworkConfigList> ParseSingleConf(std::string_view bytes);

// Reads (sys::ReadRegularFile, kMaxConfFileBytes) and parses a file; `.conflist` is a list,
// anything else a single-plugin config.
Result<NetworkConfigList> LoadConfFile(const std::string& path);

// Files in `dir` (not recursing) whose extension is one of `extensions` (".conflist"), sorted
// by name. A missing folder gives an empty list, as in libcni. Only folders are left out:
// FIFOs, devices and broken links are listed, so that reading them reports them.
Result<std::vector<std::string>> ConfFiles(const std::string& dir,
                                           const std::vector<std::string>& extensions);

// Every candidate configuration file of a folder in the order LoadNetwork tries them.
Result<std::vector<std::string>> ConfFilesInLoadOrder(const std::string& dir);

// The network named `name` in `dir`, chosen in libcni's order (see the file comment). A file
// that fails to parse before the match is an error, as in libcni.
Result<NetworkConfigList> LoadNetwork(const std::string& dir, const std::string& name);

// `type="bridge"` plus ` name="x"` when the plugin object has a name (libcni's wording).
std::string PluginDescription(const PluginConfig& plugin);

}  // namespace nodegate::runtime
