#include "plugins/portmap/conflicts.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "lib/cni/cache_pods.h"
#include "lib/net/host_address.h"
#include "lib/sys/atomic_file.h"
#include "lib/sys/io.h"

namespace nodegate::portmap {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
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
  return installed.protocol == claim.protocol && installed.host_port == claim.host_port &&
         net::HostAddressesOverlap({installed.family, installed.host_ip},
                                   {claim.family, claim.host_ip}, net::WildcardReach::kOwnFamily);
}

bool OwnedBy(const InstalledMapping& installed, const Config& config) {
  return installed.container_id == config.container_id &&
         (installed.network.empty() || installed.network == config.network_name);
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
      const auto pod = cni::PodOfContainer(EnvOr("NODEGATE_CNI_CACHE_DIR", kCniCacheDir), m.network,
                                           m.container_id);
      return Error(kErrHostPortTaken, ConflictMessage(claim, m, pod));
    }
  }
  return OkStatus();
}

}  // namespace nodegate::portmap
