// The bridge plugin binary: all behaviour lives in bridge_lib (plugins/bridge/plugin.h).
#include "lib/cni/skel.h"
#include "lib/sys/detached.h"
#include "lib/sys/prefault.h"
#include "plugins/bridge/plugin.h"

NODEGATE_PREFAULT_AT_START();

int main() {
  // A plugin process exits right after its verb: nf_tables sockets' release may be left to a
  // helper (lib/netfilter/release.h).
  nodegate::sys::AllowDetachedWork();
  return nodegate::cni::PluginMain(nodegate::bridge::MakePlugin());
}
