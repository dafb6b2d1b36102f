#pragma once
// `admit --live`: the host ports a candidate pod asks for that the node already gives to
// someone the scheduler does not know about: a process listening on it, or a portmap DNAT of
// another pod's container.

#include <string>
#include <vector>

#include "admit/api/types.h"
#include "ports/claims.h"
#include "ports/live.h"

namespace nodegate::ports {

struct PortWarning {
  std::string kind;  // "port-listening" | "port-mapped"
  PortKey key;       // the candidate's host port
  std::string detail;
};

// One warning per (host port of `pod`, overlapping live claim). Mappings whose pod is `pod`
// itself (the running previous version) are not warnings.
std::vector<PortWarning> LiveWarningsFor(const admit::Pod& pod, const LiveClaims& live);

}  // namespace nodegate::ports
