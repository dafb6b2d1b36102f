#pragma once
// The node's real mapped claims: portmap::ListInstalledMappings() in every layout, as a
// MappedSource. The only part of ports/ that links portmap (and so netfilter).

#include "ports/live.h"

namespace nodegate::ports {

MappedSource PortmapMappedSource();

}  // namespace nodegate::ports
