#pragma once
// The files a C library reads for names, as glibc's `files` NSS module reads them: /etc/hosts,
// /etc/services and /etc/protocols. Text in, values out; reading the files is the caller's.
//
// Every line is "FIELD FIELD [ALIAS...]" (blanks or tabs between fields); '#' starts a
// comment; a line that does not parse is passed over, as glibc does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/net/ip.h"

namespace nodegate::net {

// /etc/hosts, "ADDRESS NAME [ALIAS...]": every line whose name or an alias equals `name`
// (ASCII case-insensitively), in file order. The canonical name is the first such line's NAME.
struct HostsMatch {
  std::string canonical_name;
  std::vector<IpAddress> addresses;
};
HostsMatch FindHostsAddresses(std::string_view hosts, std::string_view name);

// The NAME of the first /etc/hosts line with `address`.
std::optional<std::string> FindHostsName(std::string_view hosts, const IpAddress& address);

// /etc/services, "NAME PORT/PROTOCOL [ALIAS...]": the port of `name` (or an alias) for
// `protocol` ("tcp", "udp"...), and the name of `port`. Names compare case-sensitively.
std::optional<uint16_t> FindServicePort(std::string_view services, std::string_view name,
                                        std::string_view protocol);
std::optional<std::string> FindServiceName(std::string_view services, uint16_t port,
                                           std::string_view protocol);

// /etc/protocols, "NAME NUMBER [ALIAS...]".
struct ProtocolEntry {
  std::string name;
  int number = 0;
  std::vector<std::string> aliases;
};
std::optional<ProtocolEntry> FindProtocolByName(std::string_view protocols, std::string_view name);
std::optional<ProtocolEntry> FindProtocolByNumber(std::string_view protocols, int number);

}  // namespace nodegate::net
