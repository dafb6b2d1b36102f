// The bridge plugin binary: all behaviour lives in bridge_lib (plugins/bridge/plugin.h).
#include "ipam/plugin.h"
#include "lib/cni/sibling.h"
#include "lib/cni/skel.h"
#include "lib/sys/detached.h"
#include "lib/sys/prefault.h"
#include "plugins/bridge/plugin.h"

NODEGATE_PREFAULT_AT_START();
NODEGATE_PLUGIN_NOTE("bridge");

int main() {
  // A plugin process exits right after its verb: nf_tables sockets' release may be left to a
  // helper (lib/netfilter/release.h).
  nodegate::sys::AllowDetachedWork();
  // Its usual IPAM: this build's host-local runs in this process (lib/cni/sibling.h).
  nodegate::cni::LinkSibling("host-local", &nodegate::ipam::MakePlugin);
  return nodegate::cni::PluginMain(nodegate::bridge::MakePlugin());
}
