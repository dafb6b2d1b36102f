// portmap: host port mappings for containers (iptables or nftables), see README.md.
#include "lib/cni/sibling.h"
#include "lib/cni/skel.h"
#include "lib/sys/detached.h"
#include "lib/sys/prefault.h"
#include "plugins/portmap/plugin.h"

NODEGATE_PREFAULT_AT_START();
NODEGATE_PLUGIN_NOTE("portmap");

int main() {
  // A plugin process exits right after its verb: its nf_tables sockets may outlive it
  // (lib/netfilter/release.h).
  nodegate::sys::AllowDetachedWork();
  return nodegate::cni::PluginMain(nodegate::portmap::MakePlugin());
}
