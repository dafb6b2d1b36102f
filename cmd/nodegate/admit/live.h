#pragma once
// `admit --live` / `guard --live`: the node's live host-port claims (listening sockets,
// portmap mappings) checked against each candidate after the scheduler's or kubelet's
// verdict. Warnings only, unless --strict turns them into a rejection.

#include <string>
#include <vector>

#include "admit/check/checker.h"
#include "ports/warnings.h"

namespace nodegate::admit {

// The failure a --strict rejection reports (ours, not an upstream plugin).
inline constexpr char kLivePortsPlugin[] = "LivePorts";
inline constexpr char kLivePortsReason[] = "host port in use on this node";

// RejectForWarnings: --strict. An admitted verdict with warnings becomes a rejection with one
// LivePorts failure per warning (and, for the kubelet profile, admitReason LivePorts).
void RejectForWarnings(PodVerdict& verdict, const std::vector<ports::PortWarning>& warnings,
                       Profile profile);

// ReadNodeLiveClaims: listeners and every layout's mappings on the host ports `candidates`
// declare (the only ones a warning can name; none when they declare none), pods named from
// `cni_cache_dir`.
Result<ports::LiveClaims> ReadNodeLiveClaims(const std::string& cni_cache_dir,
                                             const std::vector<Pod>& candidates);

}  // namespace nodegate::admit
