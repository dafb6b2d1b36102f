#include "ports/live.h"

#include <future>
#include <map>
#include <set>
#include <stop_token>

#include "lib/cni/cache_pods.h"
#include "ports/process.h"
#include "ports/sock_diag.h"

namespace nodegate::ports {

Result<std::vector<ListeningClaim>> ListListeningClaims(const PortFilter& ports) {
  NG_ASSIGN_OR_RETURN(std::vector<BoundSocket> sockets, ListBoundSockets());
  if (ports) {
    std::erase_if(sockets, [&](const BoundSocket& s) { return !ports->contains(s.key.port); });
  }
  std::set<uint64_t> inodes;
  for (const BoundSocket& s : sockets) {
    inodes.insert(s.inode);
  }
  const auto owners = SocketOwners(inodes);
  std::vector<ListeningClaim> claims;
  claims.reserve(sockets.size());
  // A server with several sockets on one key (SO_REUSEPORT, v4 and v6) is listed once.
  std::set<std::pair<PortKey, int>> seen;
  for (const BoundSocket& s : sockets) {
    const auto it = owners.find(s.inode);
    if (it == owners.end()) {
      if (seen.insert({s.key, 0}).second) {
        claims.push_back({s.key, std::nullopt, "", std::nullopt});
      }
      continue;
    }
    for (const ProcessInfo& p : it->second) {
      if (seen.insert({s.key, p.pid}).second) {
        claims.push_back({s.key, p.pid, p.command, p.container});
      }
    }
  }
  return claims;
}

Result<LiveClaims> ReadLiveClaims(const MappedSource& mapped, const std::string& cni_cache_dir,
                                  const PortFilter& ports) {
  // The three sources are independent, and most of their time is the kernel's (netlink dumps,
  // /proc, the cache folder): each reads in its own thread. The cache is only needed when
  // something is mapped, so its reader is stopped once the mappings turn out to be none. For
  // a few ports, the few mapped containers' cache files are read afterwards instead.
  if (ports && ports->empty()) return LiveClaims{};
  // Keyed reads cost per port (a manifest may declare thousands): past a few, the mappings
  // and the cache are read whole and the mappings filtered here.
  constexpr size_t kKeyedPortsAtMost = 64;
  const PortFilter keyed = ports && ports->size() <= kKeyedPortsAtMost ? ports : std::nullopt;
  std::stop_source stop_cache;
  std::future<std::map<std::string, std::string>> pods;
  if (!keyed) {
    pods = std::async(std::launch::async, [&cni_cache_dir, token = stop_cache.get_token()] {
      return cni::PodsByContainerId(cni_cache_dir, token);
    });
  }
  auto listening = std::async(std::launch::async, [&ports] { return ListListeningClaims(ports); });
  LiveClaims live;
  auto mapped_claims = mapped(keyed);
  if (mapped_claims.ok() && ports && !keyed) {
    std::erase_if(*mapped_claims,
                  [&](const MappedClaim& m) { return !ports->contains(m.key.port); });
  }
  if (!mapped_claims.ok() || mapped_claims->empty()) stop_cache.request_stop();
  std::map<std::string, std::string> pods_by_id;
  if (pods.valid()) {
    pods_by_id = pods.get();
  } else if (mapped_claims.ok() && !mapped_claims->empty()) {
    std::set<std::string> ids;
    for (const MappedClaim& m : *mapped_claims) ids.insert(m.container_id);
    pods_by_id = cni::PodsByContainerId(cni_cache_dir, {}, &ids);
  }
  auto listening_claims = listening.get();
  if (!mapped_claims.ok()) return mapped_claims.error();
  if (!listening_claims.ok()) return listening_claims.error();
  live.mapped = std::move(*mapped_claims);
  for (MappedClaim& m : live.mapped) {
    if (const auto it = pods_by_id.find(m.container_id); it != pods_by_id.end()) {
      m.pod = it->second;
    }
  }
  live.listening = std::move(*listening_claims);
  return live;
}

}  // namespace nodegate::ports
