#pragma once
// The claims the kernel holds right now: listening sockets with their processes, and portmap's
// mappings with their pods. Where the mappings come from is injected (MappedSource), so the
// join and the CLIs are testable without netfilter; the binaries pass PortmapMappedSource()
// (ports/portmap_source.h).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "ports/claims.h"

namespace nodegate::ports {

// The mapped claims of the node; with a port, only those of that host port (a source may read
// less then: the refusal's keyed reads instead of whole tables).
using MappedSource = std::function<Result<std::vector<MappedClaim>>(std::optional<int> only_port)>;

struct LiveClaims {
  std::vector<MappedClaim> mapped;
  std::vector<ListeningClaim> listening;
};

// One claim per (socket, owning process) of this network namespace; a socket no visible
// process holds gets one claim without a pid. With a port, only the sockets on it (and only
// their owners are looked up).
Result<std::vector<ListeningClaim>> ListListeningClaims(std::optional<int> only_port = {});

// The mapped claims of `mapped` with pods named from the CNI cache in `cni_cache_dir`, and
// the listening claims; with a port, only the claims on that host port.
Result<LiveClaims> ReadLiveClaims(const MappedSource& mapped, const std::string& cni_cache_dir,
                                  std::optional<int> only_port = {});

}  // namespace nodegate::ports
