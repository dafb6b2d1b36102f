// portmap: host port mappings for containers (iptables or nftables), see README.md.
#include "lib/cni/skel.h"
#include "lib/netfilter/release.h"
#include "plugins/portmap/plugin.h"

int main() {
  // A plugin process exits right after its verb: its nf_tables sockets may outlive it.
  nodegate::netfilter::DeferNfnetlinkRelease();
  return nodegate::cni::PluginMain(nodegate::portmap::MakePlugin());
}
