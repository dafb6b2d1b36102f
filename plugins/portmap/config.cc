#include "plugins/portmap/config.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "lib/json/field.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap {
namespace {

Error Invalid(const std::string& msg) { return Error(kErrInvalidConfig, msg); }

// "\"snat\" must be a boolean": the key as written in the config, then the type it needs.
Error KeyMustBe(const json_field::FieldMismatch& mismatch) {
  return Invalid("\"" + std::string(mismatch.key) + "\" must be " + mismatch.described());
}

Result<Protocol> ParseProtocol(const cni::Json& entry) {
  const auto protocol = json_field::ReadString(entry, "protocol");
  if (!protocol.given()) {
    return Invalid("port mapping needs a \"protocol\" (tcp, udp or sctp)");
  }
  std::string text = *protocol.value();
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (text == "tcp") return Protocol::kTcp;
  if (text == "udp") return Protocol::kUdp;
  if (text == "sctp") return Protocol::kSctp;
  return Invalid("unknown protocol \"" + *protocol.value() +
                 "\" in port mapping (want tcp, udp or sctp)");
}

Result<int> ParsePort(const cni::Json& entry, const char* key, const char* what) {
  // A null port is a bad number, not a missing one.
  const auto port = json_field::ReadInteger(entry, key, json_field::NullIs::kMismatch);
  if (port.mismatched()) {
    return Invalid(std::string("Invalid ") + what +
                   " port number: " + port.mismatch().found->dump());
  }
  if (!port.given()) {
    return Invalid(std::string("port mapping needs \"") + key + "\"");
  }
  const int64_t number = *port.value();
  if (number <= 0 || number > 65535) {
    return Invalid(std::string("Invalid ") + what + " port number: " + std::to_string(number));
  }
  return static_cast<int>(number);
}

Result<std::vector<PortMapping>> ParseMappings(const cni::Json& runtime_config) {
  std::vector<PortMapping> out;
  const auto list = json_field::ReadList(runtime_config, "portMappings");
  if (list.mismatched()) {
    return Invalid("runtimeConfig.portMappings must be a list");
  }
  const cni::Json* entries = list.value_or(nullptr);
  if (entries == nullptr) {
    return out;
  }
  for (const auto& entry : *entries) {
    if (!entry.is_object()) {
      return Invalid("each port mapping must be an object");
    }
    PortMapping m;
    NG_ASSIGN_OR_RETURN(m.host_port, ParsePort(entry, "hostPort", "host"));
    NG_ASSIGN_OR_RETURN(m.container_port, ParsePort(entry, "containerPort", "container"));
    NG_ASSIGN_OR_RETURN(m.protocol, ParseProtocol(entry));
    NG_ASSIGN_OR_RETURN(const std::string host_ip,
                        json_field::ReadString(entry, "hostIP").GetOr("", KeyMustBe));
    if (!host_ip.empty()) {
      auto parsed = net::IpAddress::Parse(host_ip);
      if (!parsed) {
        return Invalid("invalid hostIP \"" + host_ip + "\"");
      }
      m.host_ip = *parsed;
    }
    out.push_back(m);
  }
  // Two mappings of one call for the same host address, protocol and port cannot both win.
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    std::set<std::tuple<std::string, int, int>> seen;
    for (const auto& m : out) {
      if (m.host_ip && m.host_ip->family() != family) continue;
      const auto key = std::make_tuple(m.has_specific_host_ip() ? m.host_ip->ToString() : "",
                                       static_cast<int>(m.protocol), m.host_port);
      if (!seen.insert(key).second) {
        return Invalid("duplicate port mapping for " + std::string(ProtocolName(m.protocol)) +
                       " host port " + std::to_string(m.host_port));
      }
    }
  }
  return out;
}

// The reference's rule (function parseConfig): first IPv4 and first IPv6 of prevResult,
// skipping addresses that belong to another interface or to a host-side interface.
void PickContainerAddresses(const cni::CniResult& prev, const std::string& ifname, Config& config) {
  for (const auto& ip : prev.ips) {
    if (!ifname.empty() && ip.interface && *ip.interface >= 0 &&
        static_cast<size_t>(*ip.interface) < prev.interfaces.size()) {
      const auto& iface = prev.interfaces[static_cast<size_t>(*ip.interface)];
      if (iface.name != ifname || iface.sandbox.empty()) {
        continue;
      }
    }
    if (ip.address.family() == net::Family::kV4) {
      if (!config.container_v4) config.container_v4 = ip.address;
    } else if (!config.container_v6) {
      config.container_v6 = ip.address;
    }
  }
}

Status SelectBackend(const cni::Json& raw, Config& config) {
  std::vector<std::string> iptables_keys, nftables_keys;
  if (!config.external_set_mark_chain.empty()) {
    iptables_keys.push_back("externalSetMarkChain");
  }
  if (config.iptables_mode) {
    iptables_keys.push_back("iptablesMode");
  }
  for (const auto& [key, list] : {std::pair<const char*, const std::vector<std::string>*>{
                                      "conditionsV4", &config.conditions_v4.tokens},
                                  {"conditionsV6", &config.conditions_v6.tokens}}) {
    const auto implied = BackendOfConditions(*list);
    if (implied == Backend::kIptables) iptables_keys.push_back(key);
    if (implied == Backend::kNftables) nftables_keys.push_back(key);
  }
  auto join = [](const std::vector<std::string>& keys) {
    std::string out = "[";
    for (size_t i = 0; i < keys.size(); ++i) out += (i ? " " : "") + keys[i];
    return out + "]";
  };
  NG_ASSIGN_OR_RETURN(const std::optional<std::string> name,
                      json_field::ReadString(raw, "backend").Get(KeyMustBe));
  if (name) {
    if (*name == "iptables") {
      config.backend = Backend::kIptables;
    } else if (*name == "nftables") {
      config.backend = Backend::kNftables;
    } else {
      return Invalid("unrecognized backend \"" + *name + "\"");
    }
  } else if (!iptables_keys.empty() && !nftables_keys.empty()) {
    return Invalid("configuration mixes iptables-specific options " + join(iptables_keys) +
                   " and nftables-specific options " + join(nftables_keys));
  } else if (!iptables_keys.empty()) {
    config.backend = Backend::kIptables;
  } else if (!nftables_keys.empty()) {
    config.backend = Backend::kNftables;
  }
  if (config.backend == Backend::kIptables && !nftables_keys.empty()) {
    return Invalid(
        "iptables backend was requested but configuration contains nftables-specific options " +
        join(nftables_keys));
  }
  if (config.backend == Backend::kNftables && !iptables_keys.empty()) {
    return Invalid(
        "nftables backend was requested but configuration contains iptables-specific options " +
        join(iptables_keys));
  }
  return OkStatus();
}

Result<HostPortConflicts> ParseHostPortConflicts(const cni::Json& raw) {
  const cni::Json* value = json_field::GivenField(raw, "hostPortConflicts");
  if (value == nullptr) return HostPortConflicts::kAllow;
  const std::string name = json_field::StringOrEmpty(raw, "hostPortConflicts");
  if (name == "allow") return HostPortConflicts::kAllow;
  if (name == "reject") return HostPortConflicts::kReject;
  return Invalid("\"hostPortConflicts\" must be \"allow\" or \"reject\", got " + value->dump());
}

// The conditions must be usable by the backend they belong to; parsed here, once, so a bad
// token is a config error before any kernel call, not a half-applied rule set.
Status ParseBothConditions(Config& config) {
  struct Slot {
    const char* key;
    net::Family family;
    Conditions* conditions;
  };
  for (const Slot& slot : {Slot{"conditionsV4", net::Family::kV4, &config.conditions_v4},
                           Slot{"conditionsV6", net::Family::kV6, &config.conditions_v6}}) {
    auto parsed = ParseConditions(std::move(slot.conditions->tokens), slot.family);
    if (!parsed.ok()) {
      return Invalid(std::string(slot.key) + ": " + parsed.error().msg);
    }
    *slot.conditions = std::move(*parsed);
  }
  return OkStatus();
}

// snat, masqAll, markMasqBit and externalSetMarkChain: what is masqueraded and how it is marked.
Status ParseMasquerade(const cni::Json& raw, Config& config) {
  NG_ASSIGN_OR_RETURN(config.snat, json_field::ReadBool(raw, "snat").GetOr(true, KeyMustBe));
  NG_ASSIGN_OR_RETURN(config.masq_all,
                      json_field::ReadBool(raw, "masqAll").GetOr(false, KeyMustBe));
  const auto mark_bit = json_field::ReadInteger(raw, "markMasqBit");
  if (mark_bit.present()) {
    const int64_t bit = mark_bit.value_or(-1);  // not an integer: as out of range
    if (bit < 0 || bit > 31) {
      return Invalid("MasqMarkBit must be between 0 and 31");
    }
    config.mark_masq_bit = static_cast<int>(bit);
  }
  const auto chain = json_field::ReadString(raw, "externalSetMarkChain");
  if (chain.present()) {
    if (chain.value_or("").empty()) {
      return Invalid("\"externalSetMarkChain\" must be a non-empty string");
    }
    config.external_set_mark_chain = *chain.value();
    if (config.external_set_mark_chain.size() >= 29) {
      return Invalid("\"externalSetMarkChain\" is longer than an iptables chain name (28)");
    }
    if (mark_bit.present()) {
      return Invalid("Cannot specify externalSetMarkChain and markMasqBit");
    }
  }
  return OkStatus();
}

// iptablesMode, hostPortConflicts and conditionsV4/V6, then the backend that "backend" names or
// the options imply, and the conditions parsed for it.
Status ParseBackendOptions(const cni::Json& raw, Config& config) {
  if (const cni::Json* mode_value = json_field::GivenField(raw, "iptablesMode")) {
    const auto mode =
        mode_value->is_string() ? ParseIptablesMode(mode_value->get<std::string>()) : std::nullopt;
    if (!mode) {
      return Invalid("\"iptablesMode\" must be \"nft\" or \"legacy\", got " + mode_value->dump());
    }
    config.iptables_mode = mode;
  }
  NG_ASSIGN_OR_RETURN(config.host_port_conflicts, ParseHostPortConflicts(raw));
  NG_ASSIGN_OR_RETURN(config.conditions_v4.tokens,
                      json_field::ReadStringList(raw, "conditionsV4").GetOr({}, KeyMustBe));
  NG_ASSIGN_OR_RETURN(config.conditions_v6.tokens,
                      json_field::ReadStringList(raw, "conditionsV6").GetOr({}, KeyMustBe));
  NG_RETURN_IF_ERROR(SelectBackend(raw, config));
  return ParseBothConditions(config);
}

// The container's addresses from prevResult, and what the mappings need of them: a prevResult
// on ADD and CHECK, and an address of each hostIP's family.
Status ReadContainerAddresses(const cni::NetConf& conf, const Invocation& invocation,
                              Config& config) {
  const bool needs_prev =
      invocation.purpose == Purpose::kAdd || invocation.purpose == Purpose::kCheck;
  if (conf.prev_result) {
    PickContainerAddresses(*conf.prev_result, invocation.ifname, config);
  } else if (needs_prev && !config.mappings.empty()) {
    return Invalid(invocation.purpose == Purpose::kAdd ? "must be called as chained plugin"
                                                       : "Required prevResult missing");
  }
  // A hostIP only makes sense when the container has an address of its family; the reference
  // silently ignored such mappings, which hid configuration mistakes.
  if (invocation.purpose != Purpose::kDel && conf.prev_result) {
    for (const auto& m : config.mappings) {
      if (m.host_ip && !config.container(m.host_ip->family())) {
        return Invalid("hostIP " + m.host_ip->ToString() + " is IPv" +
                       (m.host_ip->is_v4() ? "4" : "6") +
                       " but the container has no address of that family");
      }
    }
    if (!config.mappings.empty() && !config.container_v4 && !config.container_v6 &&
        invocation.purpose != Purpose::kValidate) {
      return Invalid("prevResult has no IP address for interface " + invocation.ifname);
    }
  }
  return OkStatus();
}

}  // namespace

std::string_view ProtocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcp:
      return "tcp";
    case Protocol::kUdp:
      return "udp";
    case Protocol::kSctp:
      return "sctp";
  }
  return "tcp";
}

int ProtocolNumber(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcp:
      return 6;
    case Protocol::kUdp:
      return 17;
    case Protocol::kSctp:
      return 132;
  }
  return 6;
}

std::string_view BackendName(Backend backend) {
  return backend == Backend::kIptables ? "iptables" : "nftables";
}

const cni::gojson::Shape& ConfigShape() {
  using cni::gojson::Any;
  using cni::gojson::ListOf;
  using cni::gojson::Null;
  using cni::gojson::Struct;
  // PortMapEntry's fields are plain values (int, string): a null leaves them as they were.
  static const cni::gojson::Shape shape = cni::NetConfShape({
      {"backend", Any()},
      {"iptablesMode", Any()},
      {"hostPortConflicts", Any()},
      {"snat", Any()},
      {"conditionsV4", ListOf(Any())},
      {"conditionsV6", ListOf(Any())},
      {"masqAll", Any(), Null::kKeep},
      {"markMasqBit", Any()},
      {"externalSetMarkChain", Any()},
      {"runtimeConfig",
       Struct({{"portMappings", ListOf(Struct({{"hostPort", Any(), Null::kKeep},
                                               {"containerPort", Any(), Null::kKeep},
                                               {"protocol", Any(), Null::kKeep},
                                               {"hostIP", Any(), Null::kKeep}}))}}),
       Null::kKeep},
  });
  return shape;
}

std::vector<PortMapping> Config::MappingsFor(net::Family family) const {
  std::vector<PortMapping> out;
  for (const auto& m : mappings) {
    if (!m.host_ip || m.host_ip->family() == family) {
      out.push_back(m);
    }
  }
  return out;
}

std::optional<Backend> BackendOfConditions(const std::vector<std::string>& conditions) {
  if (conditions.empty() || conditions.front().empty()) {
    return std::nullopt;
  }
  const char first = conditions.front().front();
  return (first == '-' || first == '!') ? Backend::kIptables : Backend::kNftables;
}

Result<Conditions> ParseConditions(std::vector<std::string> tokens, net::Family family) {
  Conditions out;
  const std::optional<Backend> implied = BackendOfConditions(tokens);
  if (implied == Backend::kIptables) {
    NG_ASSIGN_OR_RETURN(out.parsed, ipt::ParseIptablesConditions(tokens, family));
  } else if (implied == Backend::kNftables) {
    NG_ASSIGN_OR_RETURN(out.parsed, ParseNftConditions(tokens, family));
  }
  out.tokens = std::move(tokens);
  return out;
}

Result<Config> ParseConfig(const cni::NetConf& conf, const Invocation& invocation) {
  Config config;
  config.network_name = conf.name;
  config.container_id = invocation.container_id;
  config.ifname = invocation.ifname;
  NG_RETURN_IF_ERROR(ParseMasquerade(conf.raw, config));
  NG_RETURN_IF_ERROR(ParseBackendOptions(conf.raw, config));
  if (invocation.purpose == Purpose::kGc) {
    return config;
  }
  NG_ASSIGN_OR_RETURN(config.mappings, ParseMappings(conf.runtime_config));
  NG_RETURN_IF_ERROR(ReadContainerAddresses(conf, invocation, config));
  return config;
}

Status ValidateConfig(const cni::NetConf& conf) {
  Invocation invocation{.container_id = "validate", .ifname = "", .purpose = Purpose::kValidate};
  // Without an ifname, every prevResult address counts (the interface is not known yet).
  auto config = ParseConfig(conf, invocation);
  if (!config.ok()) {
    return config.error();
  }
  return OkStatus();
}

}  // namespace nodegate::portmap
