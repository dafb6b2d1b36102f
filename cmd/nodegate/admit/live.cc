#include "cmd/nodegate/admit/live.h"

#include <set>

#include "ports/declared.h"
#include "ports/portmap_source.h"

namespace nodegate::admit {

void RejectForWarnings(PodVerdict& verdict, const std::vector<ports::PortWarning>& warnings,
                       Profile profile) {
  if (!verdict.admitted || warnings.empty()) {
    return;
  }
  verdict.admitted = false;
  for (const ports::PortWarning& w : warnings) {
    verdict.failures.push_back(
        {kLivePortsPlugin, kLivePortsReason, "hostPort " + w.key.ToString() + ": " + w.detail});
  }
  if (profile == Profile::kKubelet) {
    verdict.admit_reason = kLivePortsPlugin;
    verdict.admit_message = std::string(kLivePortsReason) + ": " + warnings.front().detail;
  } else {
    verdict.code = "Unschedulable";
  }
}

Result<ports::LiveClaims> ReadNodeLiveClaims(const std::string& cni_cache_dir,
                                             const std::vector<Pod>& candidates) {
  std::set<int> wanted;
  for (const ports::DeclaredClaim& c : ports::DeclaredClaimsOf(candidates)) {
    wanted.insert(c.key.port);
  }
  auto live = ports::ReadLiveClaims(ports::PortmapMappedSource(), cni_cache_dir, wanted);
  if (!live.ok()) {
    return live.error().WithContext("--live");
  }
  return std::move(live).value();
}

}  // namespace nodegate::admit
