#include "webhook/claims/claims.h"

#include <ctime>
#include <limits>
#include <utility>

#include "lib/base/hash.h"
#include "lib/base/result.h"

namespace nodegate::webhook {
namespace {

using nlohmann::json;

constexpr size_t kMaxLeaseBytes = 4u << 20;
constexpr size_t kMaxNameBytes = 253;
constexpr size_t kMaxTextBytes = 512;  // any string of a claim
constexpr size_t kMaxPortsPerClaim = 256;
constexpr size_t kMaxResourcesPerClaim = 64;
constexpr std::string_view kLeasePrefix = "nodegate-claims-";

std::string_view QosName(admit::QosClass qos) {
  switch (qos) {
    case admit::QosClass::kGuaranteed:
      return "Guaranteed";
    case admit::QosClass::kBurstable:
      return "Burstable";
    case admit::QosClass::kBestEffort:
      return "BestEffort";
  }
  return "BestEffort";
}

json EncodeResource(const admit::Resource& r) {
  json out = json::object();
  const std::pair<std::string_view, int64_t> fixed[] = {
      {admit::kResourceCpu, r.milli_cpu},
      {admit::kResourceMemory, r.memory},
      {admit::kResourceEphemeralStorage, r.ephemeral_storage}};
  for (const auto& [name, amount] : fixed) {
    if (amount != 0) {
      out[std::string(name)] = amount;
    }
  }
  for (const auto& [name, amount] : r.scalar) {
    out[name] = amount;
  }
  return out;
}

// ClaimError: why a claim is refused (travels in this file only).
struct ClaimError {
  std::string message;
};

const json& Member(const json& object, const char* key, json::value_t type, bool required) {
  static const json kNull;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) {
      throw ClaimError{std::string(key) + ": required"};
    }
    return kNull;
  }
  const bool ok =
      type == json::value_t::number_integer ? it->is_number_integer() : it->type() == type;
  if (!ok) {
    throw ClaimError{std::string(key) + ": wrong type"};
  }
  return *it;
}

std::string Text(const json& object, const char* key, bool required) {
  const json& j = Member(object, key, json::value_t::string, required);
  if (j.is_null()) {
    return "";
  }
  std::string s = j.get<std::string>();
  if (s.size() > kMaxTextBytes) {
    throw ClaimError{std::string(key) + ": too long"};
  }
  return s;
}

admit::Resource DecodeResource(const json& object, const char* key) {
  admit::Resource r;
  const json& j = Member(object, key, json::value_t::object, false);
  if (j.is_null()) {
    return r;
  }
  if (j.size() > kMaxResourcesPerClaim) {
    throw ClaimError{std::string(key) + ": too many resources"};
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it.key().empty() ||
        it.key().size() > kMaxTextBytes) {
      throw ClaimError{std::string(key) + "." + it.key().substr(0, 64) + ": not an amount"};
    }
    const int64_t amount = it->get<int64_t>();
    if (it.key() == admit::kResourceCpu) {
      r.milli_cpu = amount;
    } else if (it.key() == admit::kResourceMemory) {
      r.memory = amount;
    } else if (it.key() == admit::kResourceEphemeralStorage) {
      r.ephemeral_storage = amount;
    } else if (it.key() != admit::kResourcePods) {
      r.scalar[it.key()] = amount;
    }
  }
  return r;
}

}  // namespace

std::string FormatTime(WallClock::time_point t) {
  const std::time_t seconds = WallClock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<WallClock::time_point> ParseTime(std::string_view text) {
  if (text.size() != 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || text[19] != 'Z') {
    return std::nullopt;
  }
  auto number = [&](size_t at, size_t len) -> int {
    int n = 0;
    for (size_t i = at; i < at + len; ++i) {
      if (text[i] < '0' || text[i] > '9') {
        return -1;
      }
      n = n * 10 + (text[i] - '0');
    }
    return n;
  };
  std::tm tm{};
  tm.tm_year = number(0, 4) - 1900;
  tm.tm_mon = number(5, 2) - 1;
  tm.tm_mday = number(8, 2);
  tm.tm_hour = number(11, 2);
  tm.tm_min = number(14, 2);
  tm.tm_sec = number(17, 2);
  if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  return WallClock::from_time_t(timegm(&tm));
}

std::string LeaseName(std::string_view node) {
  if (kLeasePrefix.size() + node.size() <= kMaxNameBytes) {
    return std::string(kLeasePrefix) + std::string(node);
  }
  return std::string(kLeasePrefix) + Sha512Hex(node).substr(0, 64);
}

json EncodeClaim(const StoredClaim& claim) {
  const admit::PodFacts& f = *claim.facts;
  json out = {{"uid", f.uid},
              {"pod", f.key},
              {"expires", FormatTime(claim.expires)},
              {"by", claim.by},
              {"qos", QosName(f.qos)},
              {"requests", EncodeResource(f.requests)},
              {"frees", EncodeResource(f.EvictionFrees())}};
  if (!f.Owner().empty()) {
    out["owner"] = f.Owner();
  }
  if (f.priority) {
    out["priority"] = *f.priority;
  }
  if (f.static_pod) {
    out["static"] = true;
  }
  if (f.mirror_pod) {
    out["mirror"] = true;
  }
  if (!f.ports.empty()) {
    json ports = json::array();
    for (const admit::WantedPort& p : f.ports) {
      ports.push_back({{"ip", p.port.ip},
                       {"protocol", p.port.protocol},
                       {"port", p.port.port},
                       {"container", p.container}});
    }
    out["ports"] = std::move(ports);
  }
  return out;
}

Result<StoredClaim> DecodeClaim(const json& value) {
  try {
    if (!value.is_object()) {
      throw ClaimError{"not an object"};
    }
    auto facts = std::make_shared<admit::PodFacts>();
    facts->uid = Text(value, "uid", true);
    facts->key = Text(value, "pod", true);
    if (facts->uid.empty() || facts->key.find('/') == std::string::npos) {
      throw ClaimError{"uid and pod (NAMESPACE/NAME) are required"};
    }
    facts->owner = admit::InternText(Text(value, "owner", false));
    const json& priority = Member(value, "priority", json::value_t::number_integer, false);
    if (!priority.is_null()) {
      const int64_t p = priority.get<int64_t>();
      if (p < std::numeric_limits<int32_t>::min() || p > std::numeric_limits<int32_t>::max()) {
        throw ClaimError{"priority: out of range"};
      }
      facts->priority = static_cast<int32_t>(p);
    }
    facts->static_pod = !Member(value, "static", json::value_t::boolean, false).is_null() &&
                        value["static"].get<bool>();
    facts->mirror_pod = !Member(value, "mirror", json::value_t::boolean, false).is_null() &&
                        value["mirror"].get<bool>();
    const std::string qos = Text(value, "qos", false);
    facts->qos = qos == "Guaranteed"  ? admit::QosClass::kGuaranteed
                 : qos == "Burstable" ? admit::QosClass::kBurstable
                                      : admit::QosClass::kBestEffort;
    facts->requests = DecodeResource(value, "requests");
    admit::Resource frees = DecodeResource(value, "frees");
    if (!admit::SameAmounts(frees, facts->requests)) {
      facts->distinct_eviction_frees = std::make_shared<const admit::Resource>(std::move(frees));
    }
    const json& ports = Member(value, "ports", json::value_t::array, false);
    if (!ports.is_null()) {
      if (ports.size() > kMaxPortsPerClaim) {
        throw ClaimError{"ports: too many"};
      }
      for (const json& p : ports) {
        if (!p.is_object()) {
          throw ClaimError{"ports: not an object"};
        }
        const int64_t number =
            Member(p, "port", json::value_t::number_integer, true).get<int64_t>();
        if (number < 1 || number > 65535) {
          throw ClaimError{"ports: port out of range"};
        }
        facts->ports.push_back(admit::WantedPort{
            admit::HostPort::Normalized(Text(p, "ip", false), Text(p, "protocol", false),
                                        static_cast<int32_t>(number)),
            Text(p, "container", false)});
      }
    }
    StoredClaim claim;
    const auto expires = ParseTime(Text(value, "expires", true));
    if (!expires) {
      throw ClaimError{"expires: not an RFC 3339 UTC time"};
    }
    claim.expires = *expires;
    claim.by = Text(value, "by", false);
    claim.facts = std::move(facts);
    return claim;
  } catch (const ClaimError& e) {
    return Error(kErrDecode, "claim: " + e.message);
  } catch (const json::exception& e) {
    return Error(kErrDecode, std::string("claim: ") + e.what());
  }
}

Result<std::vector<StoredClaim>> DecodeClaims(std::string_view text, size_t* unreadable) {
  json list;
  try {
    list = json::parse(text);
  } catch (const json::exception& e) {
    return Error(kErrDecode, std::string(kClaimsAnnotation) + ": not JSON: " + e.what());
  }
  if (!list.is_array()) {
    return Error(kErrDecode, std::string(kClaimsAnnotation) + ": not a list");
  }
  std::vector<StoredClaim> out;
  for (const json& item : list) {
    if (out.size() >= kMaxClaimsPerLease) {
      ++*unreadable;
      continue;
    }
    auto claim = DecodeClaim(item);
    if (claim.ok()) {
      out.push_back(std::move(claim).value());
    } else {
      ++*unreadable;
    }
  }
  return out;
}

ClaimStore::ClaimStore(kube::ApiClient& client, ClaimsOptions options)
    : client_(client), options_(std::move(options)) {}

std::string ClaimStore::LeasePath(const std::string& node) const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + kube::UrlEncode(options_.namespace_name) +
         "/leases/" + kube::UrlEncode(LeaseName(node));
}

Result<LeaseState> ClaimStore::Read(const std::string& node, kube::Clock::time_point deadline) {
  NG_ASSIGN_OR_RETURN(auto got, client_.Get(LeasePath(node), deadline, kMaxLeaseBytes));
  LeaseState state;
  if (got.status == 404) {
    return state;
  }
  if (got.status != 200) {
    return Error(kErrDecode,
                 kube::StatusMessage("read claims of node " + node, got.status, got.body));
  }
  try {
    state.object = json::parse(got.body);
  } catch (const json::exception& e) {
    return Error(kErrDecode, "claims of node " + node + ": not JSON: " + e.what());
  }
  if (!state.object.is_object() || !state.object.contains("metadata") ||
      !state.object["metadata"].is_object()) {
    return Error(kErrDecode, "claims of node " + node + ": not a Lease");
  }
  const json& metadata = state.object["metadata"];
  auto rv = metadata.find("resourceVersion");
  if (rv == metadata.end() || !rv->is_string() || rv->get<std::string>().empty()) {
    return Error(kErrDecode, "claims of node " + node + ": no resourceVersion");
  }
  state.exists = true;
  state.resource_version = rv->get<std::string>();
  auto annotations = metadata.find("annotations");
  if (annotations != metadata.end() && annotations->is_object()) {
    auto text = annotations->find(std::string(kClaimsAnnotation));
    if (text != annotations->end() && text->is_string()) {
      auto claims = DecodeClaims(text->get<std::string>(), &state.unreadable);
      if (claims.ok()) {
        state.claims = std::move(claims).value();
      } else {
        ++state.unreadable;  // the whole list: its writer's claims lapse with it
      }
    }
  }
  return state;
}

Result<WriteOutcome> ClaimStore::Write(const std::string& node, const LeaseState& read,
                                       const std::vector<StoredClaim>& claims,
                                       kube::Clock::time_point deadline) {
  json list = json::array();
  for (const StoredClaim& claim : claims) {
    list.push_back(EncodeClaim(claim));
  }
  json lease = read.exists ? read.object : json::object();
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  json& metadata = lease["metadata"];
  if (!metadata.is_object()) {
    metadata = json::object();
  }
  metadata["name"] = LeaseName(node);
  metadata["namespace"] = options_.namespace_name;
  metadata["labels"]["app.kubernetes.io/managed-by"] = "nodegate-webhook";
  metadata["annotations"][std::string(kClaimsNodeAnnotation)] = node;
  metadata["annotations"][std::string(kClaimsAnnotation)] = list.dump();
  if (read.exists) {
    metadata["resourceVersion"] = read.resource_version;  // the write's precondition
  } else {
    metadata.erase("resourceVersion");
  }
  lease["spec"]["holderIdentity"] = options_.identity;
  const auto now = WallClock::now();
  // MicroTime: RFC 3339 with microseconds.
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::string renew = FormatTime(now);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(micros));
  renew.insert(renew.size() - 1, frac);
  lease["spec"]["renewTime"] = renew;
  const std::string path = read.exists ? LeasePath(node)
                                       : "/apis/coordination.k8s.io/v1/namespaces/" +
                                             kube::UrlEncode(options_.namespace_name) + "/leases";
  NG_ASSIGN_OR_RETURN(
      auto got, client_.Call(read.exists ? "PUT" : "POST", path, lease.dump(), deadline, 1u << 20));
  if (got.status == 200 || got.status == 201) {
    return WriteOutcome::kRecorded;
  }
  // 409: an update from an older version (Conflict) or a create that lost (AlreadyExists);
  // 404: deleted since it was read. Either way: read again.
  if (got.status == 409 || (read.exists && got.status == 404)) {
    return WriteOutcome::kConflict;
  }
  return Error(kErrDecode,
               kube::StatusMessage("record claim on node " + node, got.status, got.body));
}

}  // namespace nodegate::webhook
