#pragma once
// The claims the kernel holds right now: listening sockets with their processes, and portmap's
// mappings with their pods. Where the mappings come from is injected (MappedSource), so the
// join and the CLIs are testable without netfilter; the binaries pass PortmapMappedSource()
// (ports/portmap_source.h).

#include <functional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "ports/claims.h"

namespace nodegate::ports {

using MappedSource = std::function<Result<std::vector<MappedClaim>>()>;

struct LiveClaims {
  std::vector<MappedClaim> mapped;
  std::vector<ListeningClaim> listening;
};

// One claim per (socket, owning process) of this network namespace; a socket no visible
// process holds gets one claim without a pid.
Result<std::vector<ListeningClaim>> ListListeningClaims();

// The mapped claims of `mapped` with pods named from the CNI cache in `cni_cache_dir`, and
// the listening claims.
Result<LiveClaims> ReadLiveClaims(const MappedSource& mapped, const std::string& cni_cache_dir);

}  // namespace nodegate::ports
