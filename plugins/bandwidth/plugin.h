#pragma once
// The bandwidth plugin's verbs, for main.cc and in-process tests:
//
//   ADD    validate, find the host veth, apply the shaping plan (converging; rolled back on
//          failure), print prevResult plus the ifb interface when egress is shaped.
//   DEL    validate, remove the plugin's qdiscs/filters from the host veth when it can still be
//          found (netns and veth alive), delete the ifb. Needs neither netns nor prevResult.
//   CHECK  needs prevResult; verifies every object and parameter of the plan (code 103).
//   GC     deletes bwp ifbs whose attachment is not in cni.dev/valid-attachments.
//   STATUS ready when the kernel's psched clock and an rtnetlink socket are available.

#include "lib/cni/skel.h"

namespace nodegate::bandwidth {

// Versions the reference bandwidth plugin speaks (it needs interfaces, so >= 0.3.0), plus 1.1.0.
const std::vector<std::string>& SupportedVersions();

cni::Plugin MakePlugin();

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args);
Status CmdDel(const cni::CmdArgs& args);
Status CmdCheck(const cni::CmdArgs& args);
Status CmdGc(const cni::CmdArgs& args);
Status CmdStatus(const cni::CmdArgs& args);

}  // namespace nodegate::bandwidth
