#pragma once
// CHECK of one attachment against its prevResult, in the reference's order and words (its
// cmdCheck): the bridge (a bridge, its MAC, its promiscuous mode), the container interface (in
// the sandbox prevResult names, a veth, its MAC), the host veth (a prevResult interface whose
// peer is the container's and whose master is the bridge), the container's addresses with a
// route to each subnet, every route of prevResult; then, beyond the reference, the ipMasq and
// macspoofchk rules. Errors: code 103 (7 for an unusable prevResult).

#include "lib/base/result.h"
#include "lib/cni/skel.h"
#include "plugins/bridge/config.h"

namespace nodegate::bridge {

Status CheckAttachment(const cni::CmdArgs& args, const BridgeConfig& config,
                       const cni::CniResult& prev);

}  // namespace nodegate::bridge
