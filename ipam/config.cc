#include "ipam/config.h"

#include <algorithm>
#include <optional>

#include "lib/cni/args.h"
#include "lib/cni/skel.h"
#include "lib/cni/version.h"
#include "lib/json/field.h"

namespace nodegate::ipam {
namespace {

using cni::Json;

Error TypeError(const std::string& path, std::string_view want) {
  return Error(kErrDecode, "error decoding ipam config: " + path + " must be " + std::string(want));
}

// Words a mismatch of a member of the object at `path` ("ipam.", "ipam.ranges[0][1].").
auto MustBeAt(std::string path) {
  return [path = std::move(path)](const json_field::FieldMismatch& mismatch) {
    return TypeError(path + std::string(mismatch.key), mismatch.described());
  };
}

Result<std::optional<net::IpAddress>> OptIp(const Json& obj, const char* key,
                                            const std::string& path) {
  NG_ASSIGN_OR_RETURN(std::string text, json_field::ReadString(obj, key).GetOr("", MustBeAt(path)));
  if (text.empty()) {
    return std::optional<net::IpAddress>();
  }
  auto ip = net::IpAddress::Parse(text);
  if (!ip) {
    return ConfigError("invalid IP address: " + text);
  }
  return std::optional<net::IpAddress>(CanonicalIp(*ip));
}

Result<std::optional<net::IpPrefix>> OptCidr(const Json& obj, const char* key,
                                             const std::string& path) {
  NG_ASSIGN_OR_RETURN(std::string text, json_field::ReadString(obj, key).GetOr("", MustBeAt(path)));
  if (text.empty()) {
    return std::optional<net::IpPrefix>();
  }
  auto prefix = net::IpPrefix::Parse(text);
  if (!prefix) {
    return ConfigError("invalid CIDR address: " + text);
  }
  return std::optional<net::IpPrefix>(*prefix);
}

// Go reads these as int (64 bits); cni::Route keeps the small numbers they are as int.
Result<std::optional<int>> OptInt(const Json& obj, const char* key, const std::string& path) {
  NG_ASSIGN_OR_RETURN(std::optional<int64_t> number,
                      json_field::ReadInteger(obj, key).Get(MustBeAt(path)));
  if (!number) {
    return std::optional<int>();
  }
  return std::optional<int>(static_cast<int>(*number));
}

// "ip" or "ip/prefix", as the reference's ip.ParseIP reads it: a prefix must be a valid one for
// the address's family (Go's ParseCIDR), and is then ignored.
Result<net::IpAddress> ParseRequestedIp(const std::string& text) {
  const size_t slash = text.find('/');
  auto ip = net::IpAddress::Parse(text.substr(0, slash));
  bool valid = ip.has_value();
  if (valid && slash != std::string::npos) {
    const std::string prefix = text.substr(slash + 1);
    valid = !prefix.empty() && prefix.size() <= 3 &&
            prefix.find_first_not_of("0123456789") == std::string::npos &&
            std::stoi(prefix) <= ip->bit_length();
  }
  if (!valid) {
    return ConfigError("cannot understand ip: invalid IP address: " + text);
  }
  return CanonicalIp(*ip);
}

Status AppendIpList(const Json& object, const std::string& path, std::vector<net::IpAddress>& out) {
  const auto list = json_field::ReadList(object, "ips");
  if (list.mismatched()) {
    return TypeError(path, "a list of strings");
  }
  const Json* value = list.value_or(nullptr);
  if (value == nullptr) {
    return OkStatus();
  }
  for (const Json& item : *value) {
    // Checked one by one: an address before a non-string is judged first.
    if (!item.is_string()) {
      return TypeError(path, "a list of strings");
    }
    NG_ASSIGN_OR_RETURN(net::IpAddress ip, ParseRequestedIp(item.get<std::string>()));
    out.push_back(ip);
  }
  return OkStatus();
}

Result<std::vector<net::IpAddress>> RequestedIps(const cni::NetConf& conf,
                                                 std::string_view cni_args) {
  std::vector<net::IpAddress> all;
  NG_ASSIGN_OR_RETURN(cni::CniArgs env_args, cni::CniArgs::Parse(cni_args, {"IP"}));
  if (auto ip = env_args.Get("IP"); ip && !ip->empty()) {
    auto parsed = ParseRequestedIp(*ip);
    if (!parsed.ok()) {
      return Error(kErrInvalidEnvironment,
                   "ARGS: error parsing value of \"IP\": " + parsed.error().msg);
    }
    all.push_back(*parsed);
  }
  NG_ASSIGN_OR_RETURN(const Json* cni_args_object,
                      json_field::ReadObject(conf.args, "cni").GetOr(nullptr, MustBeAt("args.")));
  if (cni_args_object != nullptr) {
    NG_RETURN_IF_ERROR(AppendIpList(*cni_args_object, "args.cni.ips", all));
  }
  NG_RETURN_IF_ERROR(AppendIpList(conf.runtime_config, "runtimeConfig.ips", all));
  // The reference keeps them in a map: duplicates collapse.
  std::vector<net::IpAddress> unique;
  for (const auto& ip : all) {
    if (std::find(unique.begin(), unique.end(), ip) == unique.end()) {
      unique.push_back(ip);
    }
  }
  return unique;
}

}  // namespace

Result<RangeSpec> ParseRangeSpec(const Json& obj, const std::string& path) {
  if (!obj.is_object()) {
    return TypeError(path, "an object");
  }
  RangeSpec spec;
  NG_ASSIGN_OR_RETURN(spec.subnet, OptCidr(obj, "subnet", path));
  NG_ASSIGN_OR_RETURN(spec.range_start, OptIp(obj, "rangeStart", path));
  NG_ASSIGN_OR_RETURN(spec.range_end, OptIp(obj, "rangeEnd", path));
  NG_ASSIGN_OR_RETURN(spec.gateway, OptIp(obj, "gateway", path));
  return spec;
}

Result<std::vector<std::vector<RangeSpec>>> ParseRangeSets(const Json& object, const char* key,
                                                           const std::string& path) {
  std::vector<std::vector<RangeSpec>> out;
  const auto list = json_field::ReadList(object, key);
  if (list.mismatched()) {
    return TypeError(path, "a list of range sets");
  }
  const Json* value = list.value_or(nullptr);
  if (value == nullptr) {
    return out;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& set = (*value)[i];
    const std::string set_path = path + "[" + std::to_string(i) + "]";
    if (set.is_null()) {
      out.emplace_back();
      continue;
    }
    if (!set.is_array()) {
      return TypeError(set_path, "a list of ranges");
    }
    std::vector<RangeSpec> specs;
    for (size_t j = 0; j < set.size(); ++j) {
      NG_ASSIGN_OR_RETURN(RangeSpec spec,
                          ParseRangeSpec(set[j], set_path + "[" + std::to_string(j) + "]."));
      specs.push_back(spec);
    }
    out.push_back(std::move(specs));
  }
  return out;
}

Result<std::vector<cni::Route>> ParseRoutes(const Json& ipam) {
  std::vector<cni::Route> routes;
  NG_ASSIGN_OR_RETURN(const Json* value,
                      json_field::ReadList(ipam, "routes").GetOr(nullptr, MustBeAt("ipam.")));
  if (value == nullptr) {
    return routes;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& obj = (*value)[i];
    const std::string path = "ipam.routes[" + std::to_string(i) + "].";
    if (!obj.is_object()) {
      return TypeError(path.substr(0, path.size() - 1), "an object");
    }
    cni::Route route;
    NG_ASSIGN_OR_RETURN(auto dst, OptCidr(obj, "dst", path));
    if (!dst) {
      return ConfigError("route " + std::to_string(i) + " has no dst");
    }
    route.dst = *dst;
    NG_ASSIGN_OR_RETURN(route.gw, OptIp(obj, "gw", path));
    NG_ASSIGN_OR_RETURN(route.mtu, OptInt(obj, "mtu", path));
    NG_ASSIGN_OR_RETURN(route.advmss, OptInt(obj, "advmss", path));
    NG_ASSIGN_OR_RETURN(route.priority, OptInt(obj, "priority", path));
    NG_ASSIGN_OR_RETURN(route.table, OptInt(obj, "table", path));
    NG_ASSIGN_OR_RETURN(route.scope, OptInt(obj, "scope", path));
    routes.push_back(route);
  }
  return routes;
}

Result<std::vector<RangeSet>> CanonicalizeRangeSets(
    const std::vector<std::vector<RangeSpec>>& specs, const std::string& cni_version) {
  std::vector<RangeSet> sets;
  int v4 = 0, v6 = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto set = CanonicalizeRangeSet(specs[i]);
    if (!set.ok()) {
      return set.error().WithContext("invalid range set " + std::to_string(i));
    }
    (set->family() == net::Family::kV4 ? v4 : v6)++;
    sets.push_back(std::move(set).value());
  }
  if ((v4 > 1 || v6 > 1) && !cni::VersionAtLeast(cni_version, "0.3.0")) {
    return ConfigError("CNI version " + cni_version +
                       " does not support more than 1 address per family");
  }
  for (size_t i = 0; i + 1 < sets.size(); ++i) {
    for (size_t j = i + 1; j < sets.size(); ++j) {
      if (sets[i].Overlaps(sets[j])) {
        return ConfigError("range set " + std::to_string(i) + " overlaps with " +
                           std::to_string(j));
      }
    }
  }
  return sets;
}

Status ValidateStorePath(const std::string& data_dir, const std::string& network_name) {
  NG_RETURN_IF_ERROR(cni::ValidateNetworkName(network_name));
  if (network_name == "." || network_name == ".." || network_name.find('/') != std::string::npos) {
    return ConfigError("invalid network name \"" + network_name +
                       "\": not a single path component");
  }
  if (data_dir.find('\0') != std::string::npos) {
    return ConfigError("invalid dataDir: contains a NUL byte");
  }
  size_t start = 0;
  while (start <= data_dir.size()) {
    size_t end = data_dir.find('/', start);
    if (end == std::string::npos) {
      end = data_dir.size();
    }
    if (data_dir.compare(start, end - start, "..") == 0 && end - start == 2) {
      return ConfigError("invalid dataDir \"" + data_dir + "\": \"..\" is not allowed");
    }
    start = end + 1;
  }
  return OkStatus();
}

const cni::gojson::Shape& ConfigShape() {
  using cni::gojson::Any;
  using cni::gojson::Field;
  using cni::gojson::ListOf;
  using cni::gojson::Null;
  using cni::gojson::Struct;
  static const cni::gojson::Shape shape = [] {
    // Range: net.IP values (slices: null unsets) and a types.IPNet subnet (a struct value).
    const std::vector<Field> range = {{"rangeStart", Any()},
                                      {"rangeEnd", Any()},
                                      {"subnet", Any(), Null::kKeep},
                                      {"gateway", Any()}};
    const auto range_sets = ListOf(ListOf(Struct(range)));
    const auto ipam = cni::gojson::Embed({Struct(range)}, {{"Name", Any(), Null::kKeep},
                                                           {"type", Any(), Null::kKeep},
                                                           {"routes", ListOf(cni::RouteShape())},
                                                           {"dataDir", Any(), Null::kKeep},
                                                           {"resolvConf", Any(), Null::kKeep},
                                                           {"ranges", range_sets}});
    return cni::NetConfShape({
        {"ipam", ipam},
        {"runtimeConfig", Struct({{"ipRanges", range_sets}, {"ips", ListOf(Any())}}), Null::kKeep},
        {"args", Struct({{"cni", Struct({{"ips", ListOf(Any())}})}})},
    });
  }();
  return shape;
}

Result<IpamConfig> LoadIpamConfig(const cni::NetConf& conf, std::string_view cni_args, Verb verb) {
  NG_ASSIGN_OR_RETURN(const Json* ipam_object,
                      json_field::ReadObject(conf.raw, "ipam").GetOr(nullptr, MustBeAt("")));
  if (ipam_object == nullptr) {
    return ConfigError("IPAM config missing 'ipam' key");
  }
  const Json& ipam = conf.ipam;
  IpamConfig cfg;
  cfg.cni_version = conf.cni_version;
  cfg.network_name = conf.name;
  NG_ASSIGN_OR_RETURN(cfg.data_dir,
                      json_field::ReadString(ipam, "dataDir").GetOr("", MustBeAt("ipam.")));
  if (cfg.data_dir.empty()) {
    cfg.data_dir = std::string(kDefaultDataDir);
  }
  while (cfg.data_dir.size() > 1 && cfg.data_dir.back() == '/') {
    cfg.data_dir.pop_back();
  }
  NG_RETURN_IF_ERROR(ValidateStorePath(cfg.data_dir, cfg.network_name));
  if (verb == Verb::kGc) {
    return cfg;  // GC releases by owner only; ranges do not matter
  }
  NG_ASSIGN_OR_RETURN(cfg.resolv_conf,
                      json_field::ReadString(ipam, "resolvConf").GetOr("", MustBeAt("ipam.")));
  NG_ASSIGN_OR_RETURN(cfg.routes, ParseRoutes(ipam));

  // Range sets: ipRanges capability, legacy top-level range, then "ranges".
  std::vector<std::vector<RangeSpec>> specs;
  if (verb != Verb::kStatus) {
    NG_ASSIGN_OR_RETURN(specs,
                        ParseRangeSets(conf.runtime_config, "ipRanges", "runtimeConfig.ipRanges"));
  }
  NG_ASSIGN_OR_RETURN(RangeSpec legacy, ParseRangeSpec(ipam, "ipam."));
  if (legacy.subnet) {
    specs.push_back({legacy});
  }
  NG_ASSIGN_OR_RETURN(auto ranges, ParseRangeSets(ipam, "ranges", "ipam.ranges"));
  specs.insert(specs.end(), ranges.begin(), ranges.end());

  if (verb != Verb::kStatus) {
    NG_ASSIGN_OR_RETURN(cfg.requested_ips, RequestedIps(conf, cni_args));
  }
  if (specs.empty()) {
    if (verb == Verb::kStatus) {
      return cfg;  // ranges come only from the runtime; nothing to judge
    }
    return ConfigError("no IP ranges specified");
  }
  NG_ASSIGN_OR_RETURN(cfg.range_sets, CanonicalizeRangeSets(specs, conf.cni_version));
  return cfg;
}

Status ValidateConfig(const cni::NetConf& conf) {
  NG_RETURN_IF_ERROR(cni::ValidateNetworkName(conf.name));
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(conf, "", Verb::kAdd));
  (void)cfg;
  return OkStatus();
}

}  // namespace nodegate::ipam
