#include "ports/declared.h"

#include <set>

#include "admit/api/load.h"
#include "admit/framework/host_port_set.h"
#include "lib/base/result.h"

namespace nodegate::ports {
namespace {

bool OnThisNode(const admit::Pod& pod, const std::string& node_name) {
  if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    return false;
  }
  return pod.node_name.empty() || pod.node_name == node_name;
}

// AppendNew: pods whose NAMESPACE/NAME was not seen yet.
void AppendNew(std::vector<admit::Pod> pods, const std::string& node_name,
               std::set<std::string>& seen, std::vector<admit::Pod>& out) {
  for (admit::Pod& pod : pods) {
    if (OnThisNode(pod, node_name) && seen.insert(pod.Key()).second) {
      out.push_back(std::move(pod));
    }
  }
}

// WithHostNetworkPorts: a hostNetwork pod's container ports are host ports (the API server's
// defaulting, which the decoder applies; pods built in code may not have had it).
admit::Pod WithHostNetworkPorts(admit::Pod pod) {
  auto fill = [](std::vector<admit::Container>& containers) {
    for (admit::Container& c : containers) {
      for (admit::ContainerPort& p : c.ports) {
        if (p.host_port == 0) {
          p.host_port = p.container_port;
        }
      }
    }
  };
  fill(pod.containers);
  fill(pod.init_containers);
  return pod;
}

}  // namespace

Result<std::vector<admit::Pod>> LoadNodePods(const std::string& manifests_dir,
                                             const std::vector<std::string>& pods_files,
                                             const std::string& node_name) {
  std::vector<admit::Pod> out;
  std::set<std::string> seen;
  if (!manifests_dir.empty()) {
    NG_ASSIGN_OR_RETURN(auto pods, admit::LoadManifestDir(manifests_dir, node_name));
    AppendNew(std::move(pods), node_name, seen, out);
  }
  for (const std::string& file : pods_files) {
    NG_ASSIGN_OR_RETURN(auto pods, admit::LoadPods(file, /*allow_workloads=*/false));
    AppendNew(std::move(pods), node_name, seen, out);
  }
  return out;
}

std::vector<DeclaredClaim> DeclaredClaimsOf(const std::vector<admit::Pod>& pods) {
  std::vector<DeclaredClaim> claims;
  for (const admit::Pod& pod : pods) {
    const auto wanted_ports =
        admit::GetHostPorts(pod.host_network ? WithHostNetworkPorts(pod) : pod);
    for (const admit::WantedPort& wanted : wanted_ports) {
      DeclaredClaim claim;
      claim.key = {CanonicalHostIp(wanted.port.ip), wanted.port.protocol, wanted.port.port};
      claim.pod = pod.Key();
      claim.container = wanted.container;
      claim.source = pod.source;
      claims.push_back(std::move(claim));
    }
  }
  return claims;
}

}  // namespace nodegate::ports
