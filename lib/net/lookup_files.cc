#include "lib/net/lookup_files.h"

#include <charconv>

#include "lib/base/split.h"

namespace nodegate::net {
namespace {

// The fields of one line between blanks (space, tab, CR), its comment dropped.
std::vector<std::string_view> LineFields(std::string_view line) {
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
    line = line.substr(0, hash);
  }
  return Fields(line, " \t\r");
}

// Calls `fn(fields)` for each line with at least `min_fields` fields until it returns true.
template <typename Fn>
void ForEachLine(std::string_view text, size_t min_fields, Fn&& fn) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto fields = LineFields(line);
    if (fields.size() >= min_fields && fn(fields)) return;
  }
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

template <typename Int>
std::optional<Int> ParseNumber(std::string_view text) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "PORT/PROTOCOL" of a services line.
bool PortMatches(std::string_view field, std::string_view protocol, uint16_t* port) {
  const size_t slash = field.find('/');
  if (slash == std::string_view::npos || field.substr(slash + 1) != protocol) return false;
  const auto parsed = ParseNumber<uint16_t>(field.substr(0, slash));
  if (!parsed) return false;
  *port = *parsed;
  return true;
}

ProtocolEntry ToProtocol(const std::vector<std::string_view>& fields, int number) {
  ProtocolEntry entry{std::string(fields[0]), number, {}};
  for (size_t i = 2; i < fields.size(); ++i) entry.aliases.emplace_back(fields[i]);
  return entry;
}

}  // namespace

HostsMatch FindHostsAddresses(std::string_view hosts, std::string_view name) {
  HostsMatch match;
  ForEachLine(hosts, 2, [&](const std::vector<std::string_view>& fields) {
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!EqualsIgnoringCase(fields[i], name)) continue;
      const auto address = IpAddress::Parse(fields[0]);
      if (!address) break;
      if (match.addresses.empty()) match.canonical_name = std::string(fields[1]);
      match.addresses.push_back(*address);
      break;
    }
    return false;
  });
  return match;
}

std::optional<std::string> FindHostsName(std::string_view hosts, const IpAddress& address) {
  std::optional<std::string> name;
  ForEachLine(hosts, 2, [&](const std::vector<std::string_view>& fields) {
    const auto listed = IpAddress::Parse(fields[0]);
    if (!listed || *listed != address) return false;
    name = std::string(fields[1]);
    return true;
  });
  return name;
}

std::optional<uint16_t> FindServicePort(std::string_view services, std::string_view name,
                                        std::string_view protocol) {
  std::optional<uint16_t> found;
  ForEachLine(services, 2, [&](const std::vector<std::string_view>& fields) {
    uint16_t port = 0;
    if (!PortMatches(fields[1], protocol, &port)) return false;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i != 1 && fields[i] == name) {
        found = port;
        return true;
      }
    }
    return false;
  });
  return found;
}

std::optional<std::string> FindServiceName(std::string_view services, uint16_t port,
                                           std::string_view protocol) {
  std::optional<std::string> found;
  ForEachLine(services, 2, [&](const std::vector<std::string_view>& fields) {
    uint16_t listed = 0;
    if (!PortMatches(fields[1], protocol, &listed) || listed != port) return false;
    found = std::string(fields[0]);
    return true;
  });
  return found;
}

std::optional<ProtocolEntry> FindProtocolByName(std::string_view protocols, std::string_view name) {
  std::optional<ProtocolEntry> found;
  ForEachLine(protocols, 2, [&](const std::vector<std::string_view>& fields) {
    const auto number = ParseNumber<int>(fields[1]);
    if (!number) return false;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i != 1 && fields[i] == name) {
        found = ToProtocol(fields, *number);
        return true;
      }
    }
    return false;
  });
  return found;
}

std::optional<ProtocolEntry> FindProtocolByNumber(std::string_view protocols, int number) {
  std::optional<ProtocolEntry> found;
  ForEachLine(protocols, 2, [&](const std::vector<std::string_view>& fields) {
    if (ParseNumber<int>(fields[1]) != number) return false;
    found = ToProtocol(fields, number);
    return true;
  });
  return found;
}

}  // namespace nodegate::net
