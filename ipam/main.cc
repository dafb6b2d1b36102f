// host-local: IPAM plugin, a drop-in for the reference host-local (see ipam/README.md).
#include "ipam/plugin.h"

int main() { return nodegate::cni::PluginMain(nodegate::ipam::MakePlugin()); }
