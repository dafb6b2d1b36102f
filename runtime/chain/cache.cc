#include "runtime/chain/cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/base/base64.h"
#include "lib/json/field.h"
#include "lib/sys/atomic_file.h"
#include "lib/sys/io.h"
#include "runtime/conflist/conflist.h"

namespace nodegate::runtime {
namespace {

Status MakeDirs(const std::string& path, mode_t mode) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) {
      continue;
    }
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return Error(kErrIo, "mkdir " + partial + ": " + std::strerror(errno));
    }
  }
  return OkStatus();
}

}  // namespace

Result<std::string> CacheFilePath(const std::string& cache_dir, const std::string& network,
                                  const std::string& container_id, const std::string& ifname) {
  if (network.empty() || container_id.empty() || ifname.empty()) {
    return Error(kErrInvalidConfig, "cache file path requires network name (\"" + network +
                                        "\"), container ID (\"" + container_id +
                                        "\"), and interface name (\"" + ifname + "\")");
  }
  return cache_dir + "/results/" + network + "-" + container_id + "-" + ifname;
}

// An entry holds a conflist (base64) and a result: bounded like the conflists themselves.
constexpr size_t kMaxCacheEntryBytes = 2 * kMaxConfFileBytes;

// Entries hold bytes from the command line (CNI_ARGS, netns, IDs): invalid UTF-8 is replaced,
// as Go's encoder (libcni's json.Marshal) does, so writing the entry never throws.
constexpr auto kReplaceInvalidUtf8 = cni::OrderedJson::error_handler_t::replace;

std::string EncodeCacheEntry(const CachedAttachment& e) {
  cni::OrderedJson j;
  j["kind"] = kCacheKindV1;
  j["containerId"] = e.container_id;
  j["config"] = Base64Encode(e.config);
  j["ifName"] = e.ifname;
  j["networkName"] = e.network_name;
  if (!e.netns.empty()) {
    j["netns"] = e.netns;
  }
  if (!e.cni_args.empty()) {
    cni::OrderedJson args = cni::OrderedJson::array();
    for (const auto& [k, v] : e.cni_args) {
      args.push_back({k, v});
    }
    j["cniArgs"] = std::move(args);
  }
  if (e.capability_args.is_object() && !e.capability_args.empty()) {
    j["capabilityArgs"] =
        cni::OrderedJson::parse(e.capability_args.dump(-1, ' ', false, kReplaceInvalidUtf8));
  }
  if (e.result.is_object() && !e.result.empty()) {
    j["result"] = cni::OrderedJson::parse(e.result.dump(-1, ' ', false, kReplaceInvalidUtf8));
  }
  return j.dump(-1, ' ', false, kReplaceInvalidUtf8);
}

Result<CachedAttachment> DecodeCacheEntry(std::string_view bytes) {
  // libcni's cachedInfo struct; its result and capabilityArgs are maps.
  using cni::gojson::Any;
  using cni::gojson::Null;
  static const cni::gojson::Shape kShape = cni::gojson::Struct({
      {"kind", Any(), Null::kKeep},
      {"containerId", Any(), Null::kKeep},
      {"config", Any()},
      {"ifName", Any(), Null::kKeep},
      {"networkName", Any(), Null::kKeep},
      {"netns", Any(), Null::kKeep},
      {"cniArgs", cni::gojson::ListOf(Any())},
      {"capabilityArgs", cni::gojson::MapOf(Any())},
      {"result", cni::gojson::MapOf(Any())},
  });
  auto decoded = cni::gojson::Decode(bytes, kShape);
  if (!decoded.ok() || !decoded->is_object()) {
    return Error(kErrDecode, "cache entry is not a JSON object");
  }
  const cni::Json& j = *decoded;
  // Any field may hold any JSON value here: read as strings only where they are strings
  // (libcni's own decoder refuses the entry then; so do we, for "kind").
  if (json_field::ReadString(j, "kind").mismatched()) {
    return Error(kErrDecode, "cache entry: \"kind\" is not a string");
  }
  if (json_field::StringOrEmpty(j, "kind") != kCacheKindV1) {
    return Error(kErrDecode, "cache entry has wrong kind: " + json_field::StringOrEmpty(j, "kind"));
  }
  CachedAttachment e;
  e.container_id = json_field::StringOrEmpty(j, "containerId");
  e.ifname = json_field::StringOrEmpty(j, "ifName");
  e.network_name = json_field::StringOrEmpty(j, "networkName");
  e.netns = json_field::StringOrEmpty(j, "netns");
  if (auto config = Base64Decode(json_field::StringOrEmpty(j, "config"))) {
    e.config = *config;
  } else {
    return Error(kErrDecode, "cache entry: \"config\" is not base64");
  }
  if (auto it = j.find("cniArgs"); it != j.end() && it->is_array()) {
    for (const auto& pair : *it) {
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
        e.cni_args.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
      }
    }
  }
  // An empty map is no map, as for libcni's omitempty encoder (an entry reads back the same
  // after we write it; found by make fuzz).
  if (auto it = j.find("capabilityArgs"); it != j.end() && it->is_object() && !it->empty()) {
    e.capability_args = *it;
  }
  if (auto it = j.find("result"); it != j.end() && it->is_object() && !it->empty()) {
    e.result = *it;
  }
  return e;
}

Status WriteCacheEntry(const std::string& cache_dir, const CachedAttachment& entry) {
  NG_ASSIGN_OR_RETURN(std::string path, CacheFilePath(cache_dir, entry.network_name,
                                                      entry.container_id, entry.ifname));
  NG_RETURN_IF_ERROR(MakeDirs(cache_dir + "/results", 0700));
  return sys::WriteFileAtomic(path, EncodeCacheEntry(entry), 0600);
}

Result<std::optional<CachedAttachment>> ReadCacheEntry(const std::string& cache_dir,
                                                       const std::string& network,
                                                       const std::string& container_id,
                                                       const std::string& ifname) {
  NG_ASSIGN_OR_RETURN(std::string path, CacheFilePath(cache_dir, network, container_id, ifname));
  if (::access(path.c_str(), F_OK) != 0) {
    return std::optional<CachedAttachment>();
  }
  NG_ASSIGN_OR_RETURN(std::string bytes, sys::ReadRegularFile(path, kMaxCacheEntryBytes));
  auto entry = DecodeCacheEntry(bytes);
  if (!entry.ok()) {
    return entry.error().WithContext(path);
  }
  return std::optional<CachedAttachment>(std::move(entry).value());
}

Status DeleteCacheEntry(const std::string& cache_dir, const std::string& network,
                        const std::string& container_id, const std::string& ifname) {
  NG_ASSIGN_OR_RETURN(std::string path, CacheFilePath(cache_dir, network, container_id, ifname));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error(kErrIo, "remove " + path + ": " + std::strerror(errno));
  }
  return OkStatus();
}

std::vector<CachedAttachment> ListCachedAttachments(const std::string& cache_dir) {
  std::vector<CachedAttachment> out;
  const std::string dir = cache_dir + "/results";
  std::vector<std::string> names;
  if (auto* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name == "." || name == ".." || name.rfind(sys::kTempPrefix, 0) == 0) {
        continue;
      }
      names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    auto bytes = sys::ReadRegularFile(dir + "/" + name, kMaxCacheEntryBytes);
    if (!bytes.ok()) {
      continue;
    }
    auto entry = DecodeCacheEntry(*bytes);
    if (!entry.ok() || entry->ifname.empty() || entry->network_name.empty()) {
      continue;
    }
    out.push_back(std::move(entry).value());
  }
  return out;
}

}  // namespace nodegate::runtime
