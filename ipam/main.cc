// host-local: IPAM plugin, a drop-in for the reference host-local (see ipam/README.md).
#include "ipam/plugin.h"
#include "lib/sys/prefault.h"

NODEGATE_PREFAULT_AT_START();

int main() { return nodegate::cni::PluginMain(nodegate::ipam::MakePlugin()); }
