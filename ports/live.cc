#include "ports/live.h"

#include <set>

#include "ports/cni_cache.h"
#include "ports/process.h"
#include "ports/sock_diag.h"

namespace nodegate::ports {

Result<std::vector<ListeningClaim>> ListListeningClaims() {
  NG_ASSIGN_OR_RETURN(std::vector<BoundSocket> sockets, ListBoundSockets());
  std::set<uint64_t> inodes;
  for (const BoundSocket& s : sockets) {
    inodes.insert(s.inode);
  }
  const auto owners = SocketOwners(inodes);
  std::vector<ListeningClaim> claims;
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

Result<LiveClaims> ReadLiveClaims(const MappedSource& mapped, const std::string& cni_cache_dir) {
  LiveClaims live;
  NG_ASSIGN_OR_RETURN(live.mapped, mapped());
  if (!live.mapped.empty()) {
    const auto pods = PodsByContainerId(cni_cache_dir);
    for (MappedClaim& m : live.mapped) {
      if (const auto it = pods.find(m.container_id); it != pods.end()) {
        m.pod = it->second;
      }
    }
  }
  NG_ASSIGN_OR_RETURN(live.listening, ListListeningClaims());
  return live;
}

}  // namespace nodegate::ports
