// cluster-ipam: one address pool for the whole cluster, kept in etcd (see README.md).
#include "ipam/cluster/plugin.h"
#include "lib/sys/prefault.h"

NODEGATE_PREFAULT_AT_START();

int main() { return nodegate::cni::PluginMain(nodegate::ipam::cluster::MakePlugin()); }
