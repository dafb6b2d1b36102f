#pragma once
// A host-port claim is one reason a (host IP, protocol, port) is taken on this node:
//   declared   a pod spec asks for it (what the scheduler and the kubelet count);
//   mapped     portmap installed a DNAT for it (what the kernel forwards to a container);
//   listening  a process holds a socket on it (what `bind` would collide with).
// Host IPs are in canonical text ("0.0.0.0", "::", "10.0.0.5", "fd00::1"); protocols are upper
// case as in pod specs ("TCP", "UDP", "SCTP").

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nodegate::ports {

struct PortKey {
  std::string host_ip;
  std::string protocol;
  int port = 0;

  std::string ToString() const;  // "8080/TCP on 0.0.0.0"
  auto operator<=>(const PortKey&) const = default;
};

struct DeclaredClaim {
  PortKey key;
  std::string pod;        // NAMESPACE/NAME
  std::string container;  // container name
  std::string source;     // the manifest file or the --pods input the pod came from
};

struct MappedClaim {
  PortKey key;
  std::string layout;  // "iptables-legacy" | "iptables-nft" | "nftables" | "nftables-reference"
  std::string container_id;
  std::string network;
  std::string target;              // "10.88.0.2:80"
  std::optional<std::string> pod;  // NAMESPACE/NAME from the runtime's CNI cache, when known
};

struct ListeningClaim {
  PortKey key;
  std::optional<int> pid;  // nullopt: no process of this pid namespace holds the socket
  std::string command;     // /proc/PID/comm
  std::optional<std::string> container;  // container ID from /proc/PID/cgroup, when it names one
};

// "0.0.0.0" and "::": a socket or mapping on them takes the port on every address.
bool IsWildcard(std::string_view host_ip);
bool IsV6(std::string_view host_ip);

// HostIpsOverlap: two claims on the same protocol and port collide when their host IPs are
// equal or one of them is a wildcard of either family (lib/net/host_address.h's kEveryFamily:
// the scheduler's 0.0.0.0 conflicts with every address, a dual-stack "::" socket takes IPv4).
bool HostIpsOverlap(std::string_view a, std::string_view b);

// KeysOverlap: same protocol and port, and overlapping host IPs.
bool KeysOverlap(const PortKey& a, const PortKey& b);

// CanonicalHostIp: "" -> "0.0.0.0", any IP text -> its canonical form; other text unchanged.
std::string CanonicalHostIp(std::string_view host_ip);

}  // namespace nodegate::ports
