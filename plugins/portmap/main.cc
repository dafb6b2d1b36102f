// portmap: host port mappings for containers (iptables or nftables), see README.md.
#include "lib/cni/skel.h"
#include "plugins/portmap/plugin.h"

int main() { return nodegate::cni::PluginMain(nodegate::portmap::MakePlugin()); }
