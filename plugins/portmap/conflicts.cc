#include "plugins/portmap/conflicts.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/sys/atomic_file.h"
#include "lib/sys/io.h"

namespace nodegate::portmap {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// A runtime's result cache entry, empty when it cannot be read. Only a regular file, and only
// its first MiB: an entry is a few KiB, and a FIFO dropped in the cache folder must not stop
// ADD from reporting its conflict.
std::string ReadCacheEntry(const std::filesystem::path& path) {
  constexpr size_t kCacheEntryCap = 1 << 20;
  auto text = sys::ReadRegularFile(path.string(), kCacheEntryCap);
  return text.ok() ? std::move(*text) : std::string();
}

}  // namespace

std::vector<Claim> ClaimsOf(const Config& config) {
  std::vector<Claim> out;
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(family)) continue;
    for (const auto& m : config.MappingsFor(family)) {
      out.push_back({.family = family,
                     .host_ip = m.has_specific_host_ip() ? m.host_ip : std::nullopt,
                     .protocol = m.protocol,
                     .host_port = m.host_port});
    }
  }
  return out;
}

bool Overlaps(const InstalledMapping& installed, const Claim& claim) {
  if (installed.family != claim.family || installed.protocol != claim.protocol ||
      installed.host_port != claim.host_port) {
    return false;
  }
  const bool installed_any = !installed.host_ip || installed.host_ip->IsZero();
  return installed_any || !claim.host_ip || *installed.host_ip == *claim.host_ip;
}

bool OwnedBy(const InstalledMapping& installed, const Config& config) {
  return installed.container_id == config.container_id &&
         (installed.network.empty() || installed.network == config.network_name);
}

std::optional<std::string> PodOfCacheEntry(const std::string& json) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  std::string ns, name;
  for (const auto& pair : doc.value("cniArgs", nlohmann::json::array())) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      continue;
    }
    if (pair[0] == "K8S_POD_NAMESPACE") ns = pair[1].get<std::string>();
    if (pair[0] == "K8S_POD_NAME") name = pair[1].get<std::string>();
  }
  if (name.empty()) return std::nullopt;
  return ns.empty() ? name : ns + "/" + name;
}

std::optional<std::string> PodFromCache(const std::string& dir, const std::string& network,
                                        const std::string& container_id) {
  std::error_code ec;
  const std::string prefix = network.empty() ? "" : network + "-" + container_id + "-";
  for (const auto& file : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = file.path().filename().string();
    const bool candidate = network.empty()
                               ? name.find("-" + container_id + "-") != std::string::npos
                               : name.rfind(prefix, 0) == 0;
    if (!candidate) continue;
    const std::string text = ReadCacheEntry(file.path());
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    // The file name alone is ambiguous when names contain '-': the entry says whose it is.
    if (doc.is_discarded() || doc.value("containerId", container_id) != container_id) continue;
    if (!network.empty() && doc.value("networkName", network) != network) continue;
    if (auto pod = PodOfCacheEntry(text)) return pod;
  }
  return std::nullopt;
}

std::string ConflictMessage(const Claim& claim, const InstalledMapping& installed,
                            const std::optional<std::string>& pod) {
  std::string where = claim.host_ip ? claim.host_ip->ToString()
                                    : (claim.family == net::Family::kV4 ? "every IPv4 address"
                                                                        : "every IPv6 address");
  std::string owner = "container \"" + installed.container_id + "\"";
  if (!installed.network.empty()) owner += " of network \"" + installed.network + "\"";
  if (pod) owner += " (pod " + *pod + ")";
  return "host port " + std::string(ProtocolName(claim.protocol)) + "/" +
         std::to_string(claim.host_port) + " on " + where + " is already mapped to " +
         installed.target + " by " + owner + " (" + installed.layout + ")";
}

Result<sys::FileLock> LockForConflictCheck() {
  const std::string path = EnvOr("NODEGATE_PORTMAP_LOCK", kConflictLockPath);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  auto lock = sys::FileLock::Acquire(path);
  if (!lock.ok()) return lock.error().WithContext("hostPortConflicts: lock " + path);
  return lock;
}

Status RefuseTakenPorts(const Config& config) {
  const std::vector<Claim> claims = ClaimsOf(config);
  std::set<PortKey> keys;
  for (const auto& c : claims) keys.insert({c.family, c.protocol, c.host_port});
  NG_ASSIGN_OR_RETURN(const auto installed, ListInstalledMappings(keys));
  for (const auto& claim : claims) {
    for (const auto& m : installed) {
      if (OwnedBy(m, config) || !Overlaps(m, claim)) continue;
      const auto pod =
          PodFromCache(EnvOr("NODEGATE_CNI_CACHE_DIR", kCniCacheDir), m.network, m.container_id);
      return Error(kErrHostPortTaken, ConflictMessage(claim, m, pod));
    }
  }
  return OkStatus();
}

}  // namespace nodegate::portmap
