#include "ports/warnings.h"

#include "ports/declared.h"

namespace nodegate::ports {
namespace {

std::string Address(const PortKey& key) {
  const std::string ip = IsV6(key.host_ip) ? "[" + key.host_ip + "]" : key.host_ip;
  return ip + ":" + std::to_string(key.port) + "/" + key.protocol;
}

std::string DescribeListener(const ListeningClaim& l) {
  std::string who = l.pid
                        ? "process " + l.command + " (pid " + std::to_string(*l.pid) +
                              (l.container ? ", container " + l.container->substr(0, 12) : "") + ")"
                        : "a socket of no visible process";
  return who + " listens on " + Address(l.key);
}

std::string DescribeMapping(const MappedClaim& m) {
  return "portmap maps " + Address(m.key) + " to " + m.target + " for " +
         (m.pod ? "pod " + *m.pod + ", " : "") + "container " + m.container_id.substr(0, 12) +
         " (network " + m.network + ", " + m.layout + ")";
}

}  // namespace

std::vector<PortWarning> LiveWarningsFor(const admit::Pod& pod, const LiveClaims& live) {
  std::vector<PortWarning> warnings;
  for (const DeclaredClaim& wanted : DeclaredClaimsOf({pod})) {
    for (const ListeningClaim& l : live.listening) {
      if (KeysOverlap(wanted.key, l.key)) {
        warnings.push_back({"port-listening", wanted.key, DescribeListener(l)});
      }
    }
    for (const MappedClaim& m : live.mapped) {
      if (KeysOverlap(wanted.key, m.key) && m.pod != pod.Key()) {
        warnings.push_back({"port-mapped", wanted.key, DescribeMapping(m)});
      }
    }
  }
  return warnings;
}

}  // namespace nodegate::ports
