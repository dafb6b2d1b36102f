#include "lib/etcd/endpoint.h"

#include <charconv>

#include "lib/net/ip.h"

namespace nodegate::etcd {
namespace {

Error Bad(std::string_view url, const std::string& why) {
  return Error(kErrInvalidConfig, "invalid etcd endpoint \"" + std::string(url) + "\": " + why);
}

bool ValidHostName(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool Endpoint::host_is_ip() const { return net::IpAddress::Parse(host).has_value(); }

std::string Endpoint::Authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint e;
  e.url = std::string(url);
  std::string_view rest = url;
  if (rest.substr(0, 8) == "https://") {
    e.tls = true;
    rest.remove_prefix(8);
  } else if (rest.substr(0, 7) == "http://") {
    e.tls = false;
    rest.remove_prefix(7);
  } else {
    return Bad(url, "the scheme must be https:// or http://");
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return Bad(url, "a path is not allowed");
    rest = rest.substr(0, slash);
  }
  if (rest.find_first_of("@?#") != std::string_view::npos) {
    return Bad(url, "user info, queries and fragments are not allowed");
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return Bad(url, "unterminated [");
    e.host = std::string(rest.substr(1, close - 1));
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad(url, "unexpected text after ]");
      port_text = after.substr(1);
    }
    const auto ip = net::IpAddress::Parse(e.host);
    if (!ip || ip->is_v4()) return Bad(url, "[...] must hold an IPv6 address");
  } else {
    const size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) {
      if (rest.find(':') != colon) return Bad(url, "an IPv6 address must be in brackets");
      port_text = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    e.host = std::string(rest);
    if (!net::IpAddress::Parse(e.host) && !ValidHostName(e.host)) {
      return Bad(url, "the host is neither an address nor a name");
    }
  }
  if (e.host.empty()) return Bad(url, "no host");
  if (!port_text.empty() || (rest.size() && url.back() == ':')) {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
        value == 0 || value > 65535) {
      return Bad(url, "the port must be a number from 1 to 65535");
    }
    e.port = static_cast<uint16_t>(value);
  }
  return e;
}

}  // namespace nodegate::etcd
