#include "plugins/bandwidth/config.h"

#include <limits>
#include <string>

namespace nodegate::bandwidth {
namespace {

constexpr const char* kRateKeys[] = {"ingressRate", "ingressBurst", "egressRate", "egressBurst"};

// Collects every problem; the first one becomes the error message.
struct Problems {
  std::vector<std::string> list;
  void Add(std::string text) { list.push_back(std::move(text)); }
};

// The reference's rule: any rate key at the top level, even 0 or null, makes the top level
// the source of all four.
bool HasAnyRateKey(const cni::Json& obj) {
  if (!obj.is_object()) {
    return false;
  }
  for (const char* key : kRateKeys) {
    if (obj.contains(key)) {
      return true;
    }
  }
  return false;
}

uint64_t ReadUnsigned(const cni::Json& obj, const char* key, const char* unit, Problems& problems) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return 0;
  }
  if (it->is_number_unsigned()) {
    return it->get<uint64_t>();
  }
  if (it->is_number_integer() && it->get<int64_t>() >= 0) {
    return static_cast<uint64_t>(it->get<int64_t>());
  }
  problems.Add(std::string(key) + " must be a non-negative integer (" + unit + "), got " +
               it->dump());
  return 0;
}

Direction ReadDirection(const cni::Json& obj, const char* rate_key, const char* burst_key,
                        Problems& problems) {
  Direction d;
  d.rate_bits = ReadUnsigned(obj, rate_key, "bits per second", problems);
  d.burst_bits = ReadUnsigned(obj, burst_key, "bits", problems);
  return d;
}

// The reference's validateRateAndBurst, plus a floor of one byte per second and one byte of
// burst: the TBF works in whole bytes, and the reference divides by zero below 8 bits.
void ValidateDirection(const Direction& d, const char* rate_key, const char* burst_key,
                       Problems& problems) {
  if (d.rate_bits != 0 && d.burst_bits == 0) {
    problems.Add("if rate is set, burst must also be set");
  } else if (d.rate_bits == 0 && d.burst_bits != 0) {
    problems.Add("if burst is set, rate must also be set");
  } else if (d.burst_bits / 8 >= std::numeric_limits<uint32_t>::max()) {
    problems.Add("burst cannot be more than 4GB");
  } else if (d.enabled() && d.rate_bits < 8) {
    problems.Add(std::string(rate_key) + " must be at least 8 bits per second");
  } else if (d.enabled() && d.burst_bits < 8) {
    problems.Add(std::string(burst_key) + " must be at least 8 bits");
  }
}

void ReadSubnets(const cni::Json& obj, const char* key, std::vector<net::IpPrefix>& out,
                 bool& present, Problems& problems) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return;
  }
  present = true;
  if (!it->is_array()) {
    problems.Add(std::string(key) + " must be a list of CIDR strings");
    return;
  }
  for (const auto& item : *it) {
    if (!item.is_string()) {
      problems.Add("bad subnet " + item.dump() + " provided, details not a string");
      continue;
    }
    const std::string text = item.get<std::string>();
    auto prefix = net::IpPrefix::Parse(text);
    if (!prefix) {
      problems.Add("bad subnet \"" + text + "\" provided, details invalid CIDR address: " + text);
      continue;
    }
    out.push_back(prefix->Masked());
  }
}

}  // namespace

const cni::gojson::Shape& ConfigShape() {
  using cni::gojson::Any;
  using cni::gojson::Field;
  using cni::gojson::ListOf;
  using cni::gojson::Null;
  // BandwidthEntry: uint64 rates (a null leaves them as they were) and subnet lists. The
  // reference embeds a pointer to one in the config, allocated as soon as one of its keys
  // appears (even with null), and points to another from runtimeConfig.bandwidth.
  const auto entry = [](Null rate_null) {
    return std::vector<Field>{
        {"unshapedSubnets", ListOf(Any())}, {"shapedSubnets", ListOf(Any())},
        {"ingressRate", Any(), rate_null},  {"ingressBurst", Any(), rate_null},
        {"egressRate", Any(), rate_null},   {"egressBurst", Any(), rate_null},
    };
  };
  static const cni::gojson::Shape shape = [&] {
    std::vector<Field> fields = entry(Null::kAsZero);
    fields.push_back({"runtimeConfig",
                      cni::gojson::Struct({{"bandwidth", cni::gojson::Struct(entry(Null::kKeep))}}),
                      Null::kKeep});
    return cni::NetConfShape(std::move(fields));
  }();
  return shape;
}

Result<BandwidthConfig> ParseBandwidthConfig(const cni::NetConf& conf) {
  Problems problems;
  BandwidthConfig config;

  const cni::Json empty = cni::Json::object();
  const cni::Json* runtime = &empty;
  if (auto it = conf.runtime_config.find("bandwidth");
      it != conf.runtime_config.end() && !it->is_null()) {
    if (it->is_object()) {
      runtime = &*it;
    } else {
      problems.Add("runtimeConfig.bandwidth must be an object");
    }
  }
  const cni::Json& rates = HasAnyRateKey(conf.raw) ? conf.raw : *runtime;
  config.ingress = ReadDirection(rates, "ingressRate", "ingressBurst", problems);
  config.egress = ReadDirection(rates, "egressRate", "egressBurst", problems);
  if (problems.list.empty()) {
    ValidateDirection(config.ingress, "ingressRate", "ingressBurst", problems);
    ValidateDirection(config.egress, "egressRate", "egressBurst", problems);
  }

  bool runtime_names_subnets = runtime->is_object() && (runtime->contains("unshapedSubnets") ||
                                                        runtime->contains("shapedSubnets"));
  const cni::Json& subnet_source = runtime_names_subnets ? *runtime : conf.raw;
  std::vector<net::IpPrefix> unshaped, shaped;
  bool has_unshaped = false, has_shaped = false;
  ReadSubnets(subnet_source, "unshapedSubnets", unshaped, has_unshaped, problems);
  ReadSubnets(subnet_source, "shapedSubnets", shaped, has_shaped, problems);
  if (!unshaped.empty() && !shaped.empty()) {
    problems.Add(
        "unshapedSubnets and shapedSubnets cannot be both specified, one of them should be "
        "discarded");
  }
  if (!unshaped.empty()) {
    config.subnet_mode = SubnetMode::kUnshaped;
    config.subnets = std::move(unshaped);
  } else if (!shaped.empty()) {
    config.subnet_mode = SubnetMode::kShaped;
    config.subnets = std::move(shaped);
  }

  if (!problems.list.empty()) {
    std::string details;
    if (problems.list.size() > 1) {
      for (size_t i = 0; i < problems.list.size(); ++i) {
        details += (i ? "; " : "") + problems.list[i];
      }
    }
    return Error(kErrInvalidConfig, problems.list.front(), details);
  }
  return config;
}

Status ValidateConfig(const cni::NetConf& conf) {
  auto parsed = ParseBandwidthConfig(conf);
  if (!parsed.ok()) {
    return parsed.error();
  }
  return OkStatus();
}

}  // namespace nodegate::bandwidth
