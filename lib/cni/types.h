#pragma once
// The CNI result as one typed model (the union of every schema version), with decoding from
// and encoding to each version. Conversion between versions is decode-then-encode:
//
//   0.1.0/0.2.0  {cniVersion, ip4{ip,gateway,routes}, ip6{...}, dns}
//   0.3.x/0.4.0  {cniVersion, interfaces, ips[{version,interface,address,gateway}], routes, dns}
//   1.0.0/1.1.0  as 0.4.0 without ips[].version, plus interface mtu/socketPath/pciID and route
//                mtu/advmss/priority/table/scope
//
// Encoding to 0.1/0.2 keeps the first IPv4 and first IPv6 address (the reference's rule) and
// fails with "cannot convert: no valid IP addresses" when there is none.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/go_json.h"
#include "lib/net/ip.h"

namespace nodegate::cni {

struct Interface {
  std::string name;
  std::string mac;
  std::string sandbox;
  std::optional<int> mtu;
  std::string socket_path;
  std::string pci_id;
  bool operator==(const Interface&) const = default;
};

struct IpConfig {
  std::optional<int> interface;  // index into CniResult::interfaces
  net::IpPrefix address;         // host bits kept
  std::optional<net::IpAddress> gateway;
  bool operator==(const IpConfig&) const = default;
};

struct Route {
  net::IpPrefix dst;
  std::optional<net::IpAddress> gw;
  std::optional<int> mtu;
  std::optional<int> advmss;
  std::optional<int> priority;
  std::optional<int> table;
  std::optional<int> scope;
  bool operator==(const Route&) const = default;
};

struct Dns {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
  bool empty() const {
    return nameservers.empty() && domain.empty() && search.empty() && options.empty();
  }
  bool operator==(const Dns&) const = default;
};

struct CniResult {
  std::string cni_version;  // the version it was decoded from or is meant for
  std::vector<Interface> interfaces;
  std::vector<IpConfig> ips;
  std::vector<Route> routes;
  Dns dns;
  bool operator==(const CniResult&) const = default;
};

// The reference's result structs of every version as one shape (lib/cni/go_json.h), and its
// types.Route (also used by IPAM configs).
const gojson::Shape& ResultShape();
const gojson::Shape& RouteShape();

// Decodes a result of any supported version. A missing "cniVersion" means default_version.
// Errors: code 6 (decode) for malformed fields, code 1 for an unknown version.
Result<CniResult> DecodeResult(const Json& json, std::string_view default_version);

// Parses prevResult the way the reference does: its keys are folded as after the reference's
// map round trip (gojson::Refold), a missing cniVersion defaults to the config's, and the
// result's version must belong to the same schema family as the config's version.
Result<CniResult> DecodePrevResult(const Json& json, std::string_view config_version);

// Encodes `result` in the schema of `version` (which must be supported).
Result<OrderedJson> EncodeResult(const CniResult& result, std::string_view version);

// Renders JSON like Go's json.MarshalIndent with 4 spaces (what libcni prints): no trailing
// newline, and <, >, & escaped as \u003c, \u003e, \u0026 inside strings.
std::string FormatJson(const OrderedJson& json);

// The spec's error object {"code", "msg", "details"?}, formatted as above.
std::string FormatError(const Error& error);

// Decodes the spec's error JSON printed by a plugin (for runtime-side tools).
std::optional<Error> DecodeError(std::string_view text);

}  // namespace nodegate::cni
