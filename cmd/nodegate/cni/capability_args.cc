#include "cmd/nodegate/cni/capability_args.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>
#include <vector>

#include "lib/net/ip.h"

namespace nodegate::runtime {
namespace {

Error Invalid(const std::string& msg) { return Error(kErrInvalidConfig, msg); }

Result<int> ParsePort(std::string_view text, const std::string& what) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 65535) {
    return Invalid("invalid " + what + " \"" + std::string(text) + "\" (1-65535)");
  }
  return port;
}

// Splits "123.5mbit" into 123.5 and "mbit".
Result<std::pair<double, std::string>> SplitNumber(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return Invalid("\"" + std::string(text) + "\" does not start with a number");
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, value);
  if (ec != std::errc() || end != text.data() + i) {
    return Invalid("invalid number in \"" + std::string(text) + "\"");
  }
  std::string unit(text.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return std::make_pair(value, unit);
}

Result<uint64_t> Scale(std::string_view text,
                       const std::vector<std::pair<std::string, double>>& units) {
  NG_ASSIGN_OR_RETURN(auto parts, SplitNumber(text));
  for (const auto& [unit, factor] : units) {
    if (parts.second == unit) {
      const double v = parts.first * factor;
      if (v <= 0 || v > static_cast<double>(std::numeric_limits<int64_t>::max()) / 2) {
        return Invalid("\"" + std::string(text) + "\" is out of range");
      }
      return static_cast<uint64_t>(v + 0.5);
    }
  }
  return Invalid("unknown unit \"" + parts.second + "\" in \"" + std::string(text) + "\"");
}

}  // namespace

Result<cni::Json> ParsePortMapping(std::string_view text) {
  std::string_view rest = text;
  std::string host_ip;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    host_ip = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    auto ip = net::IpAddress::Parse(host_ip);
    if (!ip) {
      return Invalid("invalid host IP \"" + host_ip + "\" in -p " + std::string(text));
    }
    host_ip = ip->ToString();
  }
  std::string protocol = "tcp";
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    protocol = std::string(rest.substr(slash + 1));
    std::transform(protocol.begin(), protocol.end(), protocol.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    rest = rest.substr(0, slash);
    if (protocol != "tcp" && protocol != "udp" && protocol != "sctp") {
      return Invalid("invalid protocol \"" + protocol + "\" in -p " + std::string(text) +
                     " (tcp, udp or sctp)");
    }
  }
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) {
    return Invalid("-p " + std::string(text) + ": expected HOST:CONTAINER[/PROTO][@HOSTIP]");
  }
  NG_ASSIGN_OR_RETURN(int host_port, ParsePort(rest.substr(0, colon), "host port"));
  NG_ASSIGN_OR_RETURN(int container_port, ParsePort(rest.substr(colon + 1), "container port"));
  cni::Json mapping = {
      {"hostPort", host_port}, {"containerPort", container_port}, {"protocol", protocol}};
  if (!host_ip.empty()) {
    mapping["hostIP"] = host_ip;
  }
  return mapping;
}

Result<uint64_t> ParseRate(std::string_view text) {
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"", 1},           {"bit", 1},           {"kbit", 1e3},
      {"mbit", 1e6},     {"gbit", 1e9},        {"tbit", 1e12},
      {"kibit", 1024.0}, {"mibit", 1048576.0}, {"gibit", 1073741824.0},
      {"bps", 8},        {"kbps", 8e3},        {"mbps", 8e6},
      {"gbps", 8e9}};
  return Scale(text, kUnits);
}

Result<uint64_t> ParseBurstBits(std::string_view text) {
  static const std::vector<std::pair<std::string, double>> kUnits = {{"", 8},
                                                                     {"b", 8},
                                                                     {"k", 8192.0},
                                                                     {"kb", 8192.0},
                                                                     {"m", 8388608.0},
                                                                     {"mb", 8388608.0},
                                                                     {"g", 8589934592.0},
                                                                     {"gb", 8589934592.0},
                                                                     {"kbit", 1024.0},
                                                                     {"mbit", 1048576.0},
                                                                     {"gbit", 1073741824.0}};
  return Scale(text, kUnits);
}

Result<cni::Json> ParseBandwidth(std::string_view text) {
  cni::Json out = cni::Json::object();
  std::string direction;  // the direction a following "burst=" belongs to
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Invalid("--bandwidth: \"" + std::string(item) + "\" is not KEY=VALUE");
    }
    const std::string key(item.substr(0, eq));
    const std::string_view value = item.substr(eq + 1);
    if (key == "ingress" || key == "egress") {
      if (out.contains(key + "Rate")) {
        return Invalid("--bandwidth: " + key + " given twice");
      }
      auto rate = ParseRate(value);
      if (!rate.ok()) {
        return rate.error().WithContext("--bandwidth " + key);
      }
      out[key + "Rate"] = *rate;
      direction = key;
    } else if (key == "burst") {
      if (direction.empty()) {
        return Invalid("--bandwidth: burst must follow ingress=RATE or egress=RATE");
      }
      auto burst = ParseBurstBits(value);
      if (!burst.ok()) {
        return burst.error().WithContext("--bandwidth " + direction + " burst");
      }
      out[direction + "Burst"] = *burst;
    } else {
      return Invalid("--bandwidth: unknown key \"" + key + "\" (ingress, egress, burst)");
    }
  }
  if (out.empty()) {
    return Invalid("--bandwidth: give ingress=RATE and/or egress=RATE");
  }
  for (const std::string dir : {"ingress", "egress"}) {
    if (out.contains(dir + "Rate") && !out.contains(dir + "Burst")) {
      const uint64_t rate = out[dir + "Rate"].get<uint64_t>();
      out[dir + "Burst"] = std::max<uint64_t>(rate / 10, 1500 * 8);
    }
  }
  return out;
}

}  // namespace nodegate::runtime
