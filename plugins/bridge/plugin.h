#pragma once
// The bridge plugin's verbs, for main.cc and in-process tests:
//
//   ADD    validate; start the IPAM plugin (it runs while the links are made); make or find
//          the bridge; make the veth pair with its container end created in the container's
//          namespace; enslave, flag and VLAN the host end and bring it up; then the IPAM
//          result: the container's sysctls, addresses, routes; the bridge's gateway addresses,
//          forwarding, ipMasq and macspoofchk. Any failure undoes what this ADD made (the pair,
//          the IPAM reservation, its rules); the bridge itself is shared and stays.
//   DEL    IPAM DEL (started first), the container interface (when the netns is still there),
//          and the attachment's ipMasq and macspoofchk rules wherever they are: by name, so
//          also with the namespace gone. Repeatable.
//   CHECK  needs prevResult: IPAM CHECK, then the reference's checks of the bridge, the veth
//          pair, addresses and routes, plus ipMasq and macspoofchk rules (code 103).
//   GC     IPAM GC, then the ipMasq rules of this network whose attachment is not valid and
//          the macspoofchk chains whose host veth is gone.
//   STATUS IPAM STATUS, and a route netlink socket.

#include <string>
#include <vector>

#include "lib/cni/skel.h"

namespace nodegate::bridge {

// Every version the reference speaks (0.1.0 to 1.0.0), plus 1.1.0.
const std::vector<std::string>& SupportedVersions();

cni::Plugin MakePlugin();

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args);
Status CmdDel(const cni::CmdArgs& args);
Status CmdCheck(const cni::CmdArgs& args);
Status CmdGc(const cni::CmdArgs& args);
Status CmdStatus(const cni::CmdArgs& args);

}  // namespace nodegate::bridge
