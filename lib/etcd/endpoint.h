#pragma once
// An etcd endpoint as operators write it in the configuration: "https://10.0.0.5:2379",
// "http://etcd-0.example:2379", "https://[fd00::5]:2379". The port defaults to 2379; a path
// other than "/" is refused (the gateway's paths are fixed), as are user info and queries.

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::etcd {

struct Endpoint {
  bool tls = true;
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  uint16_t port = 2379;
  std::string url;  // as written, for messages

  bool host_is_ip() const;
  // The Host header's value: "host:port", "[v6]:port".
  std::string Authority() const;
};

// Errors: code 7, naming the endpoint and what is wrong with it.
Result<Endpoint> ParseEndpoint(std::string_view url);

}  // namespace nodegate::etcd
