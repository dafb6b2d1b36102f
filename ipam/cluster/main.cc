// cluster-ipam: one address pool for the whole cluster, kept in etcd (see README.md).
//   cluster-ipam          the CNI plugin (exec'd by the runtime: no arguments)
//   cluster-ipam agent    the node-local agent the plugin forwards its calls to (agent.h)
#include <string_view>

#include "ipam/cluster/agent.h"
#include "lib/cni/sibling.h"
#include "lib/sys/prefault.h"

NODEGATE_PREFAULT_AT_START();
NODEGATE_PLUGIN_NOTE("cluster-ipam");

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "agent") {
    return nodegate::ipam::cluster::AgentMain(argc, argv);
  }
  return nodegate::ipam::cluster::ClusterIpamMain(nodegate::cni::ProcessIo::Real());
}
