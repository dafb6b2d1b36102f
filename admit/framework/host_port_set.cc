#include "admit/framework/host_port_set.h"

#include <algorithm>

namespace nodegate::admit {

HostPort HostPort::Normalized(std::string_view ip, std::string_view protocol, int32_t port) {
  return HostPort{std::string(ip.empty() ? kDefaultBindAllHostIp : ip),
                  std::string(protocol.empty() ? "TCP" : protocol), port};
}

std::string HostPort::ToString() const {
  return std::to_string(port) + "/" + protocol + " on " + ip;
}

std::vector<WantedPort> GetHostPorts(const Pod& pod, bool sidecars_enabled) {
  std::vector<WantedPort> out;
  auto collect = [&out](const Container& c) {
    for (const ContainerPort& p : c.ports) {
      if (p.host_port <= 0) {
        continue;
      }
      out.push_back({HostPort::Normalized(p.host_ip, p.protocol, p.host_port), c.name});
    }
  };
  if (sidecars_enabled) {
    for (const Container& c : pod.init_containers) {
      if (c.restart_policy == "Always") {
        collect(c);
      }
    }
  }
  for (const Container& c : pod.containers) {
    collect(c);
  }
  return out;
}

void HostPortSet::Add(const HostPort& port, PortHolder holder) {
  by_port_[{port.protocol, port.port}].push_back({port, std::move(holder)});
  ++size_;
}

void HostPortSet::RemovePod(std::string_view pod_key) {
  for (auto it = by_port_.begin(); it != by_port_.end();) {
    auto& entries = it->second;
    const size_t before = entries.size();
    std::erase_if(entries, [&](const Entry& e) { return e.holder.pod == pod_key; });
    size_ -= before - entries.size();
    it = entries.empty() ? by_port_.erase(it) : std::next(it);
  }
}

const HostPortSet::Entry* HostPortSet::FindConflict(const HostPort& wanted) const {
  auto it = by_port_.find(std::make_pair(wanted.protocol, wanted.port));
  if (it == by_port_.end()) {
    return nullptr;
  }
  for (const Entry& e : it->second) {
    if (wanted.ip == kDefaultBindAllHostIp || e.port.ip == kDefaultBindAllHostIp ||
        e.port.ip == wanted.ip) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace nodegate::admit
