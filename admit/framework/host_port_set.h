#pragma once
// HostPortSet: the host ports held on a node and who holds them, with the scheduler's conflict
// rule (staging/src/k8s.io/kube-scheduler/framework/types.go HostPortInfo):
//   - a port is (hostIP, protocol, hostPort); "" hostIP is 0.0.0.0, "" protocol is TCP;
//   - a wanted port on 0.0.0.0 conflicts with the same protocol/port on ANY address;
//   - a wanted port on a specific IP conflicts with the same protocol/port on that IP or 0.0.0.0.
// Unlike upstream's set it keeps the holder of every entry, so a conflict can be explained.
//
//   HostPortSet used;
//   used.Add(HostPort::Normalized("", "", 8080), {"kube-system/web", "web", "web.yaml"});
//   const HostPortSet::Entry* e = used.FindConflict(HostPort::Normalized("127.0.0.1", "TCP",
//   8080));

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admit/api/types.h"

namespace nodegate::admit {

inline constexpr std::string_view kDefaultBindAllHostIp = "0.0.0.0";

struct HostPort {
  std::string ip;
  std::string protocol;
  int32_t port = 0;

  // Normalized applies the defaults: "" ip -> 0.0.0.0, "" protocol -> TCP.
  static HostPort Normalized(std::string_view ip, std::string_view protocol, int32_t port);
  // "8080/TCP on 0.0.0.0"
  std::string ToString() const;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// PortHolder: who holds (or wants) a port.
struct PortHolder {
  std::string pod;        // NAMESPACE/NAME
  std::string container;  // container name
  std::string source;     // file the pod came from, may be empty
};

// WantedPort: one host port a pod asks for and the container asking.
struct WantedPort {
  HostPort port;
  std::string container;
};

// GetHostPorts: the host ports of a pod (pkg/scheduler/util GetHostPorts): entries with
// hostPort > 0 of restartable (sidecar) init containers, then of regular containers. Ordinary
// init containers finish before the pod runs and hold nothing. `sidecars_enabled` is the
// SidecarContainers gate: when off, restartPolicy is dropped by the API server.
std::vector<WantedPort> GetHostPorts(const Pod& pod, bool sidecars_enabled = true);

class HostPortSet {
 public:
  struct Entry {
    HostPort port;
    PortHolder holder;
  };

  void Add(const HostPort& port, PortHolder holder);
  // RemovePod: every entry held by that pod (NAMESPACE/NAME).
  void RemovePod(std::string_view pod_key);
  // FindConflict: an entry that conflicts with `wanted`, or nullptr.
  const Entry* FindConflict(const HostPort& wanted) const;
  size_t size() const { return size_; }

 private:
  // Keyed by (protocol, port): every conflict shares both.
  std::map<std::pair<std::string, int32_t>, std::vector<Entry>, std::less<>> by_port_;
  size_t size_ = 0;
};

}  // namespace nodegate::admit
