// host-local: IPAM plugin, a drop-in for the reference host-local (see ipam/README.md).
#include "ipam/plugin.h"
#include "lib/cni/sibling.h"
#include "lib/sys/prefault.h"

NODEGATE_PREFAULT_AT_START();
NODEGATE_PLUGIN_NOTE("host-local");

int main() { return nodegate::cni::PluginMain(nodegate::ipam::MakePlugin()); }
