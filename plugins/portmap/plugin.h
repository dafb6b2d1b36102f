#pragma once
// The portmap plugin's verbs, wired to the CNI dispatcher by MakePlugin(). main.cc only calls
// PluginMain(MakePlugin()); tests call the verbs or exec the binary.

#include <memory>

#include "lib/base/result.h"
#include "lib/cni/skel.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {

cni::Plugin MakePlugin();

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args);
Status CmdDel(const cni::CmdArgs& args);
Status CmdCheck(const cni::CmdArgs& args);
Status CmdGc(const cni::CmdArgs& args);
Status CmdStatus(const cni::CmdArgs& args);

// The requested backend, or the reference's auto-detection: iptables when table nat works
// through libiptc, else nftables when usable. Errors: 100 when neither works.
Result<std::unique_ptr<PortMapper>> SelectMapper(const Config& config);

}  // namespace nodegate::portmap
