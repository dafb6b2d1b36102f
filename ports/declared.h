#pragma once
// Declared claims: the host ports pod specs ask for, counted as the scheduler counts them
// (admit's GetHostPorts: sidecar init containers and containers, hostPort 0 skipped, a
// hostNetwork pod's container ports are host ports).

#include <string>
#include <vector>

#include "admit/api/types.h"
#include "lib/base/result.h"
#include "ports/claims.h"

namespace nodegate::ports {

// The pods on this node: every static manifest of `manifests_dir` (the kubelet's file-source
// defaults for `node_name`), then every pod of `pods_files` ('-' is stdin), read as
// `nodegate admit` reads them. A pod already seen (a static pod's mirror) counts once;
// terminated pods and pods bound to another node are skipped. Errors are code 5 or 6.
Result<std::vector<admit::Pod>> LoadNodePods(const std::string& manifests_dir,
                                             const std::vector<std::string>& pods_files,
                                             const std::string& node_name);

// One claim per host port of each pod, in pod order.
std::vector<DeclaredClaim> DeclaredClaimsOf(const std::vector<admit::Pod>& pods);

}  // namespace nodegate::ports
