#include "plugins/bridge/config.h"

#include <set>

#include "lib/cni/args.h"
#include "lib/cni/skel.h"
#include "lib/json/field.h"
#include "lib/net/mac.h"

namespace nodegate::bridge {
namespace {

// Every problem found; the first becomes the message.
struct Problems {
  std::vector<std::string> list;
  void Add(std::string text) { list.push_back(std::move(text)); }
  // The first problem as the message, all of them as the details when there are several.
  Error AsError() const {
    std::string details;
    if (list.size() > 1) {
      for (size_t i = 0; i < list.size(); ++i) details += (i ? "; " : "") + list[i];
    }
    return Error(kErrInvalidConfig, list.front(), details);
  }
};

std::string KeyMustBe(const json_field::FieldMismatch& m) {
  return "\"" + std::string(m.key) + "\" must be " + m.described();
}

bool ReadFlag(const cni::Json& raw, const char* key, Problems& problems) {
  const auto read = json_field::ReadBool(raw, key);
  if (read.mismatched()) problems.Add(KeyMustBe(read.mismatch()));
  return read.value_or(false);
}

std::optional<int64_t> ReadInt(const cni::Json& raw, const char* key, Problems& problems) {
  const auto read = json_field::ReadInteger(raw, key);
  if (read.mismatched()) problems.Add(KeyMustBe(read.mismatch()));
  return read.value();
}

// The reference's collectVlanTrunk (taken by upstream from ovs-cni): ranges and single IDs,
// each in 1..4094, gathered into a sorted set. Its messages, word for word.
std::vector<uint16_t> CollectTrunk(const cni::Json& items, Problems& problems) {
  std::set<int64_t> vids;
  for (const cni::Json& item : items) {
    if (!item.is_object()) {
      problems.Add("each vlanTrunk entry must be an object with minID and maxID, or id");
      continue;
    }
    const auto min = ReadInt(item, "minID", problems);
    const auto max = ReadInt(item, "maxID", problems);
    const auto id = ReadInt(item, "id", problems);
    if (min && max) {
      if (*min <= 0 || *min > 4094) {
        problems.Add("incorrect trunk minID parameter");
      } else if (*max <= 0 || *max > 4094) {
        problems.Add("incorrect trunk maxID parameter");
      } else if (*max < *min) {
        problems.Add("minID is greater than maxID in trunk parameter");
      } else {
        for (int64_t v = *min; v <= *max; ++v) vids.insert(v);
      }
    } else if (max) {
      problems.Add("minID and maxID should be configured simultaneously, minID is missing");
    } else if (min) {
      problems.Add("minID and maxID should be configured simultaneously, maxID is missing");
    }
    if (id) {
      if (*id <= 0 || *id > 4094) {
        problems.Add("incorrect trunk id parameter");
      } else {
        vids.insert(*id);
      }
    }
  }
  return std::vector<uint16_t>(vids.begin(), vids.end());
}

// What the kernel accepts as an interface name (dev_valid_name), said before anything is made.
std::optional<std::string> BadInterfaceName(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 15) return "it is longer than 15 bytes";
  if (name == "." || name == "..") return "it is . or ..";
  for (char c : name) {
    if (c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
        c == '\f') {
      return "it contains / or : or whitespace";
    }
  }
  return std::nullopt;
}

void ReadMac(const std::string& text, const std::string& where, std::string& out,
             Problems& problems) {
  if (text.empty()) return;
  auto mac = net::ParseMac(text);
  if (!mac) {
    problems.Add(where + ": invalid MAC address \"" + text + "\"");
  } else if (!net::IsUsableEthernetMac(*mac)) {
    problems.Add(where + ": \"" + text +
                 "\" is not a unicast Ethernet address (a veth cannot have it)");
  } else {
    out = net::FormatMac(*mac);
  }
}

cni::Dns ReadDns(const cni::Json& raw, bool& given) {
  cni::Dns dns;
  given = false;
  const cni::Json* obj = json_field::GivenField(raw, "dns");
  if (obj == nullptr || !obj->is_object()) return dns;
  // Go's dnsConfSet: a list given at all (even empty) counts, a domain only when non-empty.
  for (const char* key : {"nameservers", "search", "options"}) {
    const auto list = json_field::ReadStringList(*obj, key);
    if (list.given()) given = true;
  }
  dns.nameservers = json_field::ReadStringList(*obj, "nameservers").value_or({});
  dns.search = json_field::ReadStringList(*obj, "search").value_or({});
  dns.options = json_field::ReadStringList(*obj, "options").value_or({});
  dns.domain = json_field::StringOrEmpty(*obj, "domain");
  given = given || !dns.domain.empty();
  return dns;
}

void ReadBridgeName(const cni::Json& raw, BridgeConfig& c, Problems& problems) {
  const auto bridge = json_field::ReadString(raw, "bridge");
  if (bridge.mismatched()) problems.Add(KeyMustBe(bridge.mismatch()));
  if (bridge.given()) c.bridge = *bridge.value();
  if (auto bad = BadInterfaceName(c.bridge)) {
    problems.Add("invalid bridge name \"" + c.bridge + "\": " + *bad);
  }
}

void ReadFlags(const cni::Json& raw, BridgeConfig& c, Problems& problems) {
  c.is_default_gateway = ReadFlag(raw, "isDefaultGateway", problems);
  c.is_gateway = ReadFlag(raw, "isGateway", problems) || c.is_default_gateway;
  c.force_address = ReadFlag(raw, "forceAddress", problems);
  c.ip_masq = ReadFlag(raw, "ipMasq", problems);
  c.hairpin = ReadFlag(raw, "hairpinMode", problems);
  c.promisc = ReadFlag(raw, "promiscMode", problems);
  c.preserve_default_vlan = ReadFlag(raw, "preserveDefaultVlan", problems);
  c.mac_spoof_check = ReadFlag(raw, "macspoofchk", problems);
  c.enable_dad = ReadFlag(raw, "enabledad", problems);
  c.disable_container_interface = ReadFlag(raw, "disableContainerInterface", problems);
  c.port_isolation = ReadFlag(raw, "portIsolation", problems);
}

void ReadMasqBackend(const cni::Json& raw, BridgeConfig& c, Problems& problems) {
  const auto backend = json_field::ReadString(raw, "ipMasqBackend");
  if (backend.mismatched()) problems.Add(KeyMustBe(backend.mismatch()));
  if (!backend.given()) return;
  if (*backend.value() == "iptables") {
    c.masq_backend = MasqBackend::kIptables;
  } else if (*backend.value() == "nftables") {
    c.masq_backend = MasqBackend::kNftables;
  } else {
    problems.Add("unknown ipmasq backend \"" + *backend.value() + "\"");
  }
}

void ReadMtuAndVlans(const cni::Json& raw, BridgeConfig& c, Problems& problems) {
  if (const auto mtu = ReadInt(raw, "mtu", problems)) {
    // The kernel's bounds for a bridge and a veth (ETH_MIN_MTU, ETH_MAX_MTU).
    if (*mtu != 0 && (*mtu < 68 || *mtu > 65535)) {
      problems.Add("invalid MTU " + std::to_string(*mtu) + " (must be 0 or between 68 and 65535)");
    } else {
      c.mtu = static_cast<uint32_t>(*mtu);
    }
  }
  if (const auto vlan = ReadInt(raw, "vlan", problems)) {
    if (*vlan < 0 || *vlan > 4094) {
      problems.Add("invalid VLAN ID " + std::to_string(*vlan) + " (must be between 0 and 4094)");
    } else {
      c.vlan = static_cast<uint16_t>(*vlan);
    }
  }
  const auto trunk = json_field::ReadList(raw, "vlanTrunk");
  if (trunk.mismatched()) problems.Add(KeyMustBe(trunk.mismatch()));
  if (trunk.given()) {
    c.vlan_trunk_given = true;
    c.trunk = CollectTrunk(**trunk.value(), problems);
  }
}

// Keys that are each valid alone but not together.
void CheckCombinations(const BridgeConfig& c, Problems& problems) {
  if (c.layer3() && c.disable_container_interface) {
    problems.Add("cannot use IPAM when DisableContainerInterface flag is set");
  }
  if (c.hairpin && c.promisc) {
    problems.Add("cannot set hairpin mode and promiscuous mode at the same time.");
  }
  if (c.is_gateway && c.vlan != 0 && c.layer3()) {
    if (auto bad = BadInterfaceName(c.VlanGatewayName())) {
      problems.Add("the VLAN gateway interface \"" + c.VlanGatewayName() +
                   "\" cannot be made: " + *bad);
    }
  }
}

// The container's MAC: CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac (the last one
// given wins, as in the reference). CNI_ARGS that cannot be read at all is the error returned.
Status ReadContainerMac(const cni::NetConf& conf, const std::string& cni_args, BridgeConfig& c,
                        Problems& problems) {
  auto parsed_args = cni::CniArgs::Parse(cni_args, {"MAC"});
  if (!parsed_args.ok()) return parsed_args.error();
  if (auto mac = parsed_args->Get("MAC")) ReadMac(*mac, "CNI_ARGS MAC", c.mac, problems);
  if (const cni::Json* cni_obj = json_field::GivenField(conf.args, "cni")) {
    const auto mac = json_field::ReadString(*cni_obj, "mac");
    if (mac.mismatched()) problems.Add("args.cni.mac must be a string");
    ReadMac(mac.value_or(""), "args.cni.mac", c.mac, problems);
  }
  const auto runtime_mac = json_field::ReadString(conf.runtime_config, "mac");
  if (runtime_mac.mismatched()) problems.Add("runtimeConfig.mac must be a string");
  ReadMac(runtime_mac.value_or(""), "runtimeConfig.mac", c.mac, problems);
  return OkStatus();
}

}  // namespace

std::string BridgeConfig::VlanGatewayName() const { return bridge + "." + std::to_string(vlan); }

const cni::gojson::Shape& ConfigShape() {
  using cni::gojson::Any;
  using cni::gojson::Field;
  using cni::gojson::ListOf;
  using cni::gojson::Null;
  using cni::gojson::Struct;
  static const cni::gojson::Shape shape = [] {
    std::vector<Field> fields = {
        {"bridge", Any(), Null::kKeep},
        {"isGateway", Any(), Null::kKeep},
        {"isDefaultGateway", Any(), Null::kKeep},
        {"forceAddress", Any(), Null::kKeep},
        {"ipMasq", Any(), Null::kKeep},
        {"ipMasqBackend", Any(), Null::kReset},
        {"mtu", Any(), Null::kKeep},
        {"hairpinMode", Any(), Null::kKeep},
        {"promiscMode", Any(), Null::kKeep},
        {"vlan", Any(), Null::kKeep},
        {"vlanTrunk",
         ListOf(Struct({{"minID", Any(), Null::kReset},
                        {"maxID", Any(), Null::kReset},
                        {"id", Any(), Null::kReset}})),
         Null::kReset},
        {"preserveDefaultVlan", Any(), Null::kKeep},
        {"macspoofchk", Any(), Null::kKeep},
        {"enabledad", Any(), Null::kKeep},
        {"disableContainerInterface", Any(), Null::kKeep},
        {"portIsolation", Any(), Null::kKeep},
        {"args", Struct({{"cni", Struct({{"mac", Any(), Null::kKeep}}), Null::kKeep}}),
         Null::kKeep},
        {"runtimeConfig", Struct({{"mac", Any(), Null::kKeep}}), Null::kKeep},
    };
    return cni::NetConfShape(std::move(fields));
  }();
  return shape;
}

Result<BridgeConfig> ParseBridgeConfig(const cni::NetConf& conf, const std::string& cni_args) {
  Problems problems;
  BridgeConfig c;
  c.network = conf.name;
  ReadBridgeName(conf.raw, c, problems);
  ReadFlags(conf.raw, c, problems);
  ReadMasqBackend(conf.raw, c, problems);
  ReadMtuAndVlans(conf.raw, c, problems);
  c.ipam_type = json_field::StringOrEmpty(conf.ipam, "type");
  CheckCombinations(c, problems);
  NG_RETURN_IF_ERROR(ReadContainerMac(conf, cni_args, c, problems));
  c.dns = ReadDns(conf.raw, c.dns_given);
  if (!problems.list.empty()) return problems.AsError();
  return c;
}

Status ValidateConfig(const cni::NetConf& conf) {
  auto parsed = ParseBridgeConfig(conf, "");
  if (!parsed.ok()) return parsed.error();
  return OkStatus();
}

}  // namespace nodegate::bridge
