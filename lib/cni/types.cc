#include "lib/cni/types.h"

#include "lib/cni/version.h"
#include "lib/json/field.h"

namespace nodegate::cni {
namespace {

Error MalformedError(const std::string& what) { return Error(kErrDecode, what); }

Error MalformedField(const json_field::FieldMismatch& mismatch) {
  return MalformedError("field \"" + std::string(mismatch.key) + "\" must be " +
                        mismatch.described());
}

Result<std::string> ResultString(const Json& obj, const char* key) {
  return json_field::ReadString(obj, key).GetOr("", MalformedField);
}

// Go reads these as int (64 bits); the model keeps the small numbers they are as int.
Result<std::optional<int>> ResultInt(const Json& obj, const char* key) {
  NG_ASSIGN_OR_RETURN(std::optional<int64_t> number,
                      json_field::ReadInteger(obj, key).Get(MalformedField));
  if (!number) {
    return std::optional<int>();
  }
  return std::optional<int>(static_cast<int>(*number));
}

Result<net::IpPrefix> GetPrefix(const Json& obj, const char* key) {
  NG_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      json_field::ReadString(obj, key).Get(MalformedField));
  if (!text) {
    return MalformedError(std::string("missing field \"") + key + "\"");
  }
  auto prefix = net::IpPrefix::Parse(*text);
  if (!prefix) {
    return MalformedError(std::string("invalid CIDR address in \"") + key + "\": " + *text);
  }
  return *prefix;
}

Result<std::optional<net::IpAddress>> GetAddress(const Json& obj, const char* key) {
  NG_ASSIGN_OR_RETURN(std::string text, ResultString(obj, key));
  if (text.empty()) {
    return std::optional<net::IpAddress>();
  }
  auto ip = net::IpAddress::Parse(text);
  if (!ip) {
    return MalformedError(std::string("invalid IP address in \"") + key + "\": " + text);
  }
  return std::optional<net::IpAddress>(*ip);
}

Result<Route> DecodeRoute(const Json& j) {
  if (!j.is_object()) {
    return MalformedError("route must be an object");
  }
  Route r;
  NG_ASSIGN_OR_RETURN(r.dst, GetPrefix(j, "dst"));
  NG_ASSIGN_OR_RETURN(r.gw, GetAddress(j, "gw"));
  NG_ASSIGN_OR_RETURN(r.mtu, ResultInt(j, "mtu"));
  NG_ASSIGN_OR_RETURN(r.advmss, ResultInt(j, "advmss"));
  NG_ASSIGN_OR_RETURN(r.priority, ResultInt(j, "priority"));
  NG_ASSIGN_OR_RETURN(r.table, ResultInt(j, "table"));
  NG_ASSIGN_OR_RETURN(r.scope, ResultInt(j, "scope"));
  return r;
}

Result<std::vector<Route>> DecodeRoutes(const Json& obj) {
  std::vector<Route> out;
  NG_ASSIGN_OR_RETURN(const Json* routes,
                      json_field::ReadList(obj, "routes").GetOr(nullptr, MalformedField));
  if (routes == nullptr) {
    return out;
  }
  for (const auto& item : *routes) {
    NG_ASSIGN_OR_RETURN(Route r, DecodeRoute(item));
    out.push_back(r);
  }
  return out;
}

Result<Dns> DecodeDns(const Json& obj) {
  Dns dns;
  NG_ASSIGN_OR_RETURN(const Json* object,
                      json_field::ReadObject(obj, "dns").GetOr(nullptr, MalformedField));
  if (object == nullptr) {
    return dns;
  }
  NG_ASSIGN_OR_RETURN(dns.nameservers,
                      json_field::ReadStringList(*object, "nameservers").GetOr({}, MalformedField));
  NG_ASSIGN_OR_RETURN(dns.domain, ResultString(*object, "domain"));
  NG_ASSIGN_OR_RETURN(dns.search,
                      json_field::ReadStringList(*object, "search").GetOr({}, MalformedField));
  NG_ASSIGN_OR_RETURN(dns.options,
                      json_field::ReadStringList(*object, "options").GetOr({}, MalformedField));
  return dns;
}

Result<CniResult> Decode020(const Json& j, CniResult out) {
  for (const char* key : {"ip4", "ip6"}) {
    NG_ASSIGN_OR_RETURN(const Json* block,
                        json_field::ReadObject(j, key).GetOr(nullptr, MalformedField));
    if (block == nullptr) {
      continue;
    }
    IpConfig ip;
    NG_ASSIGN_OR_RETURN(ip.address, GetPrefix(*block, "ip"));
    NG_ASSIGN_OR_RETURN(ip.gateway, GetAddress(*block, "gateway"));
    out.ips.push_back(ip);
    NG_ASSIGN_OR_RETURN(auto routes, DecodeRoutes(*block));
    out.routes.insert(out.routes.end(), routes.begin(), routes.end());
  }
  NG_ASSIGN_OR_RETURN(out.dns, DecodeDns(j));
  return out;
}

Result<CniResult> DecodeCurrent(const Json& j, CniResult out) {
  NG_ASSIGN_OR_RETURN(const Json* interfaces,
                      json_field::ReadList(j, "interfaces").GetOr(nullptr, MalformedField));
  if (interfaces != nullptr) {
    for (const auto& item : *interfaces) {
      if (!item.is_object()) {
        return MalformedError("interface must be an object");
      }
      Interface iface;
      NG_ASSIGN_OR_RETURN(iface.name, ResultString(item, "name"));
      NG_ASSIGN_OR_RETURN(iface.mac, ResultString(item, "mac"));
      NG_ASSIGN_OR_RETURN(iface.sandbox, ResultString(item, "sandbox"));
      NG_ASSIGN_OR_RETURN(iface.mtu, ResultInt(item, "mtu"));
      NG_ASSIGN_OR_RETURN(iface.socket_path, ResultString(item, "socketPath"));
      NG_ASSIGN_OR_RETURN(iface.pci_id, ResultString(item, "pciID"));
      out.interfaces.push_back(std::move(iface));
    }
  }
  NG_ASSIGN_OR_RETURN(const Json* ips,
                      json_field::ReadList(j, "ips").GetOr(nullptr, MalformedField));
  if (ips != nullptr) {
    for (const auto& item : *ips) {
      if (!item.is_object()) {
        return MalformedError("ip must be an object");
      }
      IpConfig ip;
      NG_ASSIGN_OR_RETURN(ip.interface, ResultInt(item, "interface"));
      NG_ASSIGN_OR_RETURN(ip.address, GetPrefix(item, "address"));
      NG_ASSIGN_OR_RETURN(ip.gateway, GetAddress(item, "gateway"));
      if (ip.interface &&
          (*ip.interface < 0 || *ip.interface >= static_cast<int>(out.interfaces.size()))) {
        return MalformedError("ip interface index " + std::to_string(*ip.interface) +
                              " out of range");
      }
      out.ips.push_back(ip);
    }
  }
  NG_ASSIGN_OR_RETURN(out.routes, DecodeRoutes(j));
  NG_ASSIGN_OR_RETURN(out.dns, DecodeDns(j));
  return out;
}

OrderedJson EncodeDns(const Dns& dns) {
  OrderedJson j = OrderedJson::object();
  if (!dns.nameservers.empty()) {
    j["nameservers"] = dns.nameservers;
  }
  if (!dns.domain.empty()) {
    j["domain"] = dns.domain;
  }
  if (!dns.search.empty()) {
    j["search"] = dns.search;
  }
  if (!dns.options.empty()) {
    j["options"] = dns.options;
  }
  return j;
}

OrderedJson EncodeRoute(const Route& r, bool extended) {
  OrderedJson j;
  j["dst"] = r.dst.ToString();
  if (r.gw) {
    j["gw"] = r.gw->ToString();
  }
  if (extended) {
    if (r.mtu) j["mtu"] = *r.mtu;
    if (r.advmss) j["advmss"] = *r.advmss;
    if (r.priority) j["priority"] = *r.priority;
    if (r.table) j["table"] = *r.table;
    if (r.scope) j["scope"] = *r.scope;
  }
  return j;
}

Result<OrderedJson> Encode020(const CniResult& r, std::string_view version) {
  OrderedJson j;
  j["cniVersion"] = std::string(version);
  const IpConfig* ip4 = nullptr;
  const IpConfig* ip6 = nullptr;
  for (const auto& ip : r.ips) {
    if (ip.address.address().is_v4() && ip4 == nullptr) {
      ip4 = &ip;
    } else if (!ip.address.address().is_v4() && ip6 == nullptr) {
      ip6 = &ip;
    }
  }
  if (ip4 == nullptr && ip6 == nullptr) {
    return Error(kErrIncompatibleVersion, "cannot convert: no valid IP addresses");
  }
  for (const auto* ip : {ip4, ip6}) {
    if (ip == nullptr) {
      continue;
    }
    const bool v4 = ip->address.address().is_v4();
    OrderedJson block;
    block["ip"] = ip->address.ToString();
    if (ip->gateway) {
      block["gateway"] = ip->gateway->ToString();
    }
    OrderedJson routes = OrderedJson::array();
    for (const auto& route : r.routes) {
      if (route.dst.address().is_v4() == v4) {
        routes.push_back(EncodeRoute(route, false));
      }
    }
    if (!routes.empty()) {
      block["routes"] = routes;
    }
    j[v4 ? "ip4" : "ip6"] = block;
  }
  j["dns"] = EncodeDns(r.dns);
  return j;
}

OrderedJson EncodeCurrent(const CniResult& r, std::string_view version, bool v1) {
  OrderedJson j;
  j["cniVersion"] = std::string(version);
  if (!r.interfaces.empty()) {
    OrderedJson list = OrderedJson::array();
    for (const auto& iface : r.interfaces) {
      OrderedJson e;
      e["name"] = iface.name;
      if (!iface.mac.empty()) e["mac"] = iface.mac;
      if (v1 && iface.mtu) e["mtu"] = *iface.mtu;
      if (!iface.sandbox.empty()) e["sandbox"] = iface.sandbox;
      if (v1 && !iface.socket_path.empty()) e["socketPath"] = iface.socket_path;
      if (v1 && !iface.pci_id.empty()) e["pciID"] = iface.pci_id;
      list.push_back(e);
    }
    j["interfaces"] = list;
  }
  if (!r.ips.empty()) {
    OrderedJson list = OrderedJson::array();
    for (const auto& ip : r.ips) {
      OrderedJson e;
      if (!v1) {
        e["version"] = ip.address.address().is_v4() ? "4" : "6";
      }
      if (ip.interface) e["interface"] = *ip.interface;
      e["address"] = ip.address.ToString();
      if (ip.gateway) e["gateway"] = ip.gateway->ToString();
      list.push_back(e);
    }
    j["ips"] = list;
  }
  if (!r.routes.empty()) {
    OrderedJson list = OrderedJson::array();
    for (const auto& route : r.routes) {
      list.push_back(EncodeRoute(route, v1));
    }
    j["routes"] = list;
  }
  j["dns"] = EncodeDns(r.dns);
  return j;
}

}  // namespace

const gojson::Shape& RouteShape() {
  using gojson::Any;
  using gojson::Null;
  static const gojson::Shape shape = gojson::Struct({{"dst", Any(), Null::kKeep},
                                                     {"gw", Any()},
                                                     {"mtu", Any()},
                                                     {"advmss", Any()},
                                                     {"priority", Any()},
                                                     {"table", Any()},
                                                     {"scope", Any()}});
  return shape;
}

const gojson::Shape& ResultShape() {
  using gojson::Any;
  using gojson::Field;
  using gojson::ListOf;
  using gojson::Null;
  using gojson::Struct;
  static const gojson::Shape shape = [] {
    const auto value = [](const char* name) { return Field{name, Any(), Null::kKeep}; };
    const auto pointer = [](const char* name) { return Field{name, Any(), Null::kReset}; };
    const auto strings = ListOf(Any());
    const auto& route = RouteShape();
    const auto ip020 = Struct({value("ip"), value("gateway"), {"routes", ListOf(route)}});
    return Struct({
        value("cniVersion"),
        {"interfaces", ListOf(Struct({value("name"), value("mac"), value("mtu"), value("sandbox"),
                                      value("socketPath"), value("pciID")}))},
        {"ips", ListOf(Struct(
                    {value("version"), pointer("interface"), value("address"), value("gateway")}))},
        {"routes", ListOf(route)},
        {"dns",
         Struct({{"nameservers", strings},
                 value("domain"),
                 {"search", strings},
                 {"options", strings}}),
         Null::kKeep},
        {"ip4", ip020},
        {"ip6", ip020},
    });
  }();
  return shape;
}

Result<CniResult> DecodeResult(const Json& json, std::string_view default_version) {
  if (!json.is_object()) {
    return MalformedError("result must be a JSON object");
  }
  NG_ASSIGN_OR_RETURN(std::string version, ResultString(json, "cniVersion"));
  if (version.empty()) {
    version = std::string(default_version);
  }
  NG_ASSIGN_OR_RETURN(ResultFamily family, FamilyOf(version));
  CniResult out;
  out.cni_version = version;
  if (family == ResultFamily::k020) {
    return Decode020(json, std::move(out));
  }
  return DecodeCurrent(json, std::move(out));
}

Result<CniResult> DecodePrevResult(const Json& json, std::string_view config_version) {
  NG_ASSIGN_OR_RETURN(CniResult result,
                      DecodeResult(gojson::Refold(json, ResultShape()), config_version));
  NG_ASSIGN_OR_RETURN(ResultFamily want, FamilyOf(config_version));
  NG_ASSIGN_OR_RETURN(ResultFamily got, FamilyOf(result.cni_version));
  if (want != got) {
    return Error(kErrDecode, "prevResult version \"" + result.cni_version +
                                 "\" does not match the config version \"" +
                                 std::string(config_version) + "\"");
  }
  return result;
}

Result<OrderedJson> EncodeResult(const CniResult& result, std::string_view version) {
  NG_ASSIGN_OR_RETURN(ResultFamily family, FamilyOf(version));
  switch (family) {
    case ResultFamily::k020:
      return Encode020(result, version);
    case ResultFamily::k040:
      return EncodeCurrent(result, version, false);
    case ResultFamily::k100:
      return EncodeCurrent(result, version, true);
  }
  return Error(kErrInternal, "unreachable result family");
}

std::string FormatJson(const OrderedJson& json) {
  const std::string dumped = json.dump(4, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  // '<', '>' and '&' can only occur inside strings in JSON text, so escaping them everywhere
  // is exactly Go's HTML-safe string escaping.
  for (char c : dumped) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatError(const Error& error) {
  OrderedJson j;
  j["code"] = error.code;
  j["msg"] = error.msg;
  if (!error.details.empty()) {
    j["details"] = error.details;
  }
  return FormatJson(j);
}

std::optional<Error> DecodeError(std::string_view text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("code") || !j["code"].is_number_integer()) {
    return std::nullopt;
  }
  Error e;
  e.code = j["code"].get<int>();
  e.msg = json_field::StringOrEmpty(j, "msg");
  e.details = json_field::StringOrEmpty(j, "details");
  return e;
}

}  // namespace nodegate::cni
