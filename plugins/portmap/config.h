#pragma once
// The portmap plugin's configuration: every key of the reference plugin (snat, masqAll,
// markMasqBit, externalSetMarkChain, conditionsV4/V6, backend) plus the `portMappings`
// capability, parsed, defaulted and validated in one pure step before any kernel call.
//
//   NG_ASSIGN_OR_RETURN(Config config, ParseConfig(args.conf, {.container_id = id, ...}));
//
// ValidateConfig() runs the same checks for tools (`nodegate conf validate`).

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/nftables/conditions.h"

namespace nodegate::portmap {

enum class Protocol { kTcp, kUdp, kSctp };

// "tcp", "udp", "sctp": the spelling iptables saves and nft accepts.
std::string_view ProtocolName(Protocol protocol);
// IANA protocol number (6, 17, 132).
int ProtocolNumber(Protocol protocol);

struct PortMapping {
  int host_port = 0;
  int container_port = 0;
  Protocol protocol = Protocol::kTcp;
  // As given; nullopt when absent or "". "0.0.0.0" and "::" keep their family (they limit the
  // mapping to that family, as in the reference) but match every local address.
  std::optional<net::IpAddress> host_ip;
  bool operator==(const PortMapping&) const = default;

  // A specific destination address (not absent, not 0.0.0.0 or ::).
  bool has_specific_host_ip() const { return host_ip && !host_ip->IsZero(); }
};

enum class Backend { kIptables, kNftables };
std::string_view BackendName(Backend backend);

// "hostPortConflicts" (ours): what ADD does when another container already maps one of its
// host ports in any layout (installed_mappings.h). kAllow is the reference's behaviour.
enum class HostPortConflicts { kAllow, kReject };

namespace ipt {
// The ip/ip6 header part of an iptables rule (what iptables prints before the first -m).
// Defined here because conditionsV4/V6 in iptables syntax are parsed into one (Conditions);
// iptables/rules.h builds every rule on it.
struct Header {
  std::optional<net::IpPrefix> src;  // stored masked (10.88.0.0/16)
  bool src_invert = false;
  std::optional<net::IpPrefix> dst;
  bool dst_invert = false;
  std::string in_iface;
  bool in_invert = false;
  std::string out_iface;
  bool out_invert = false;
  std::optional<Protocol> protocol;
  bool operator==(const Header&) const = default;
};
}  // namespace ipt

// One family's conditionsV4/V6, parsed once by ParseConfig for the backend its syntax implies
// (BackendOfConditions): nothing, the header fields of the iptables rules, or compiled nft
// matches (nftables/conditions.h).
struct Conditions {
  std::vector<std::string> tokens;  // as given; the nftables network's config hash reads them
  std::variant<std::monostate, ipt::Header, NftConditions> parsed;
  bool operator==(const Conditions&) const = default;

  // nullptr when the conditions are not of that backend's syntax (or absent).
  const ipt::Header* iptables() const { return std::get_if<ipt::Header>(&parsed); }
  const NftConditions* nftables() const { return std::get_if<NftConditions>(&parsed); }
};

struct Config {
  std::string network_name;
  std::string container_id;
  std::string ifname;

  bool snat = true;
  bool masq_all = false;
  int mark_masq_bit = 13;
  std::string external_set_mark_chain;  // empty: our CNI-HOSTPORT-SETMARK chain
  Conditions conditions_v4;
  Conditions conditions_v6;
  // Requested or implied by backend-specific options; nullopt: detect on the node.
  std::optional<Backend> backend;
  // "iptablesMode" (ours): where the iptables layout goes; nullopt: as the node's iptables
  // (iptables/mode.h).
  std::optional<IptablesMode> iptables_mode;
  HostPortConflicts host_port_conflicts = HostPortConflicts::kAllow;

  std::vector<PortMapping> mappings;

  // The container's addresses from prevResult (first IPv4 and first IPv6 of CNI_IFNAME),
  // with the prefix length as given (10.88.0.2/16).
  std::optional<net::IpPrefix> container_v4;
  std::optional<net::IpPrefix> container_v6;

  uint32_t mark() const { return 1u << mark_masq_bit; }
  const std::optional<net::IpPrefix>& container(net::Family family) const {
    return family == net::Family::kV4 ? container_v4 : container_v6;
  }
  const Conditions& conditions(net::Family family) const {
    return family == net::Family::kV4 ? conditions_v4 : conditions_v6;
  }
  // Mappings that apply to `family`: no host IP, or a host IP of that family.
  std::vector<PortMapping> MappingsFor(net::Family family) const;
};

// What the verb needs from the config.
enum class Purpose {
  kAdd,       // prevResult required; hostIP family must match a container address
  kCheck,     // as ADD
  kDel,       // prevResult optional (container addresses may be unknown)
  kGc,        // no container; mappings ignored
  kValidate,  // config only: prevResult used when present
};

struct Invocation {
  std::string container_id;
  std::string ifname;
  Purpose purpose = Purpose::kValidate;
};

// The reference's PortMapConf as Go decodes it (keys matched as lib/cni/go_json.h says).
const cni::gojson::Shape& ConfigShape();

// Parses and validates everything. Errors are code 7 (invalid config) with a message naming
// the key, except a missing prevResult on ADD/CHECK (also 7).
Result<Config> ParseConfig(const cni::NetConf& conf, const Invocation& invocation);

// The validation the plugin runs on ADD, as a pure function for tools: the network config,
// its runtimeConfig.portMappings and (when present) prevResult.
Status ValidateConfig(const cni::NetConf& conf);

// Which backend a conditions list implies: "-x"/"!" tokens are iptables syntax, anything else
// nft syntax; an empty list implies none (the reference's rule).
std::optional<Backend> BackendOfConditions(const std::vector<std::string>& conditions);

// Parses one family's conditions for the backend their syntax implies. Errors are code 7 with
// the parser's message (ParseConfig prefixes the key).
Result<Conditions> ParseConditions(std::vector<std::string> tokens, net::Family family);

}  // namespace nodegate::portmap
