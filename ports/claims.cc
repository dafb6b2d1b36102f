#include "ports/claims.h"

#include "lib/net/host_address.h"
#include "lib/net/ip.h"

namespace nodegate::ports {

std::string PortKey::ToString() const {
  return std::to_string(port) + "/" + protocol + " on " + host_ip;
}

bool IsWildcard(std::string_view host_ip) { return host_ip == "0.0.0.0" || host_ip == "::"; }

bool IsV6(std::string_view host_ip) { return host_ip.find(':') != std::string_view::npos; }

bool HostIpsOverlap(std::string_view a, std::string_view b) {
  return net::CanonicalHostIpsOverlap(a, b);
}

bool KeysOverlap(const PortKey& a, const PortKey& b) {
  return a.protocol == b.protocol && a.port == b.port && HostIpsOverlap(a.host_ip, b.host_ip);
}

std::string CanonicalHostIp(std::string_view host_ip) {
  if (host_ip.empty()) {
    return "0.0.0.0";
  }
  const auto parsed = net::IpAddress::Parse(host_ip);
  return parsed ? parsed->ToString() : std::string(host_ip);
}

}  // namespace nodegate::ports
