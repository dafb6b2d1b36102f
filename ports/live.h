#pragma once
// The claims the kernel holds right now: listening sockets with their processes, and portmap's
// mappings with their pods. Where the mappings come from is injected (MappedSource), so the
// join and the CLIs are testable without netfilter; the binaries pass PortmapMappedSource()
// (ports/portmap_source.h).

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "ports/claims.h"

namespace nodegate::ports {

// Which host ports to read: nullopt for every port, else only these (none: nothing is read).
using PortFilter = std::optional<std::set<int>>;

// The mapped claims of the node on the filter's ports (a source may read less for a few ports:
// the refusal's keyed reads instead of whole tables).
using MappedSource = std::function<Result<std::vector<MappedClaim>>(const PortFilter& ports)>;

struct LiveClaims {
  std::vector<MappedClaim> mapped;
  std::vector<ListeningClaim> listening;
};

// One claim per (socket, owning process) of this network namespace; a socket no visible
// process holds gets one claim without a pid. Only the sockets on the filter's ports (and only
// their owners are looked up).
Result<std::vector<ListeningClaim>> ListListeningClaims(const PortFilter& ports = std::nullopt);

// The mapped claims of `mapped` with pods named from the CNI cache in `cni_cache_dir`, and
// the listening claims; only those on the filter's ports.
Result<LiveClaims> ReadLiveClaims(const MappedSource& mapped, const std::string& cni_cache_dir,
                                  const PortFilter& ports = std::nullopt);

}  // namespace nodegate::ports
