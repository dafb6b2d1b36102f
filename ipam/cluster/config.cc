#include "ipam/cluster/config.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdlib>

#include "ipam/config.h"
#include "lib/base/duration.h"
#include "lib/cni/args.h"
#include "lib/cni/skel.h"
#include "lib/json/field.h"

namespace nodegate::ipam::cluster {
namespace {

using cni::Json;

// sockaddr_un's sun_path holds 108 bytes with the NUL.
constexpr size_t kMaxSocketPath = 107;

Error TypeError(const std::string& path, std::string_view want) {
  return Error(kErrDecode, "error decoding ipam config: " + path + " must be " + std::string(want));
}

auto MustBeAt(std::string path) {
  return [path = std::move(path)](const json_field::FieldMismatch& mismatch) {
    return TypeError(path + std::string(mismatch.key), mismatch.described());
  };
}

int DefaultBlockSize(const Range& range) {
  const int preferred =
      range.family() == net::Family::kV4 ? kDefaultBlockSizeV4 : kDefaultBlockSizeV6;
  return std::max(preferred, range.subnet.length());
}

// blockSize of the range object at `path`, or the default for `range`.
Result<int> BlockSizeOf(const Json& object, const std::string& path, const Range& range) {
  NG_ASSIGN_OR_RETURN(std::optional<int64_t> given,
                      json_field::ReadInteger(object, "blockSize").Get(MustBeAt(path)));
  if (!given) return DefaultBlockSize(range);
  const int bits = range.subnet.address().bit_length();
  const int min = range.family() == net::Family::kV4 ? kMinBlockSizeV4 : kMinBlockSizeV6;
  const std::string where = path + "blockSize " + std::to_string(*given);
  if (*given < range.subnet.length()) {
    return ConfigError(where + ": a block larger than the range's subnet " +
                       range.subnet.ToString());
  }
  if (*given > bits || *given < min) {
    return ConfigError(where + ": must be from " + std::to_string(min) + " to " +
                       std::to_string(bits) + " (blocks of at most " +
                       std::to_string(1 << (bits - min)) + " addresses)");
  }
  return static_cast<int>(*given);
}

// The pool: host-local's range sets, each range with its block size, every subnet distinct.
Result<Pool> ParsePool(const Json& ipam, const std::string& cni_version) {
  std::vector<std::vector<RangeSpec>> specs;
  std::vector<std::vector<std::pair<const Json*, std::string>>> objects;  // for blockSize
  NG_ASSIGN_OR_RETURN(RangeSpec legacy, ParseRangeSpec(ipam, "ipam."));
  if (legacy.subnet) {
    specs.push_back({legacy});
    objects.push_back({{&ipam, "ipam."}});
  }
  NG_ASSIGN_OR_RETURN(auto ranges, ParseRangeSets(ipam, "ranges", "ipam.ranges"));
  const Json* ranges_json = json_field::GivenField(ipam, "ranges");
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::vector<std::pair<const Json*, std::string>> set_objects;
    for (size_t j = 0; j < ranges[i].size(); ++j) {
      set_objects.emplace_back(&(*ranges_json)[i][j], "ipam.ranges[" + std::to_string(i) + "][" +
                                                          std::to_string(j) + "].");
    }
    specs.push_back(std::move(ranges[i]));
    objects.push_back(std::move(set_objects));
  }
  if (specs.empty()) return ConfigError("no IP ranges specified");
  NG_ASSIGN_OR_RETURN(std::vector<RangeSet> sets, CanonicalizeRangeSets(specs, cni_version));
  Pool pool;
  std::vector<const Range*> all;
  for (size_t i = 0; i < sets.size(); ++i) {
    PoolSet set{std::move(sets[i]), {}};
    for (size_t j = 0; j < set.range_set.ranges.size(); ++j) {
      NG_ASSIGN_OR_RETURN(int size, BlockSizeOf(*objects[i][j].first, objects[i][j].second,
                                                set.range_set.ranges[j]));
      set.block_sizes.push_back(size);
    }
    pool.sets.push_back(std::move(set));
  }
  // Blocks are named by their CIDR in one namespace per network, so two ranges may not carve
  // the same addresses, even where host-local's range check (start to end) would allow it.
  for (size_t i = 0; i < pool.sets.size(); ++i) {
    for (size_t j = 0; j < pool.sets[i].range_set.ranges.size(); ++j) {
      const Range& a = pool.sets[i].range_set.ranges[j];
      for (const Range* b : all) {
        if (a.subnet.Overlaps(b->subnet)) {
          return ConfigError("range set " + std::to_string(i) + ": subnet " + a.subnet.ToString() +
                             " overlaps " + b->subnet.ToString() +
                             " of another range; cluster-ipam needs a subnet of its own for "
                             "each range");
        }
      }
      all.push_back(&a);
    }
  }
  return pool;
}

Result<std::chrono::milliseconds> Duration(const Json& etcd, const char* key,
                                           std::chrono::milliseconds fallback) {
  NG_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      json_field::ReadString(etcd, key).Get(MustBeAt("ipam.etcd.")));
  if (!text) return fallback;
  const auto parsed = ParseGoDuration(*text);
  if (!parsed || *parsed < std::chrono::milliseconds(1) || *parsed > std::chrono::hours(1)) {
    return ConfigError(std::string("ipam.etcd.") + key + " \"" + *text +
                       "\": a duration from 1ms to 1h, such as \"5s\"");
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
}

Result<EtcdConfig> ParseEtcd(const Json& ipam) {
  NG_ASSIGN_OR_RETURN(const Json* etcd,
                      json_field::ReadObject(ipam, "etcd").GetOr(nullptr, MustBeAt("ipam.")));
  if (etcd == nullptr)
    return ConfigError("ipam.etcd is missing: cluster-ipam keeps its pool in etcd");
  EtcdConfig out;
  const auto must_be = MustBeAt("ipam.etcd.");
  NG_ASSIGN_OR_RETURN(auto endpoints, json_field::ReadStringList(*etcd, "endpoints").Get(must_be));
  if (!endpoints || endpoints->empty()) return ConfigError("ipam.etcd.endpoints is empty");
  out.endpoints = *endpoints;
  for (const auto& e : out.endpoints) NG_RETURN_IF_ERROR(etcd::ParseEndpoint(e));
  NG_ASSIGN_OR_RETURN(out.tls.ca_file, json_field::ReadString(*etcd, "caFile").GetOr("", must_be));
  NG_ASSIGN_OR_RETURN(out.tls.cert_file,
                      json_field::ReadString(*etcd, "certFile").GetOr("", must_be));
  NG_ASSIGN_OR_RETURN(out.tls.key_file,
                      json_field::ReadString(*etcd, "keyFile").GetOr("", must_be));
  NG_ASSIGN_OR_RETURN(
      out.prefix,
      json_field::ReadString(*etcd, "prefix").GetOr(std::string(kDefaultPrefix), must_be));
  if (out.prefix.empty() || out.prefix.front() != '/' ||
      out.prefix.find('\0') != std::string::npos) {
    return ConfigError("ipam.etcd.prefix \"" + out.prefix + "\" must start with /");
  }
  NG_ASSIGN_OR_RETURN(out.username, json_field::ReadString(*etcd, "username").GetOr("", must_be));
  NG_ASSIGN_OR_RETURN(out.password, json_field::ReadString(*etcd, "password").GetOr("", must_be));
  if (out.username.empty() != out.password.empty()) {
    return ConfigError("ipam.etcd.username and ipam.etcd.password go together");
  }
  NG_ASSIGN_OR_RETURN(out.timeout, Duration(*etcd, "timeout", out.timeout));
  NG_ASSIGN_OR_RETURN(out.dial_timeout, Duration(*etcd, "dialTimeout", out.dial_timeout));
  NG_ASSIGN_OR_RETURN(out.request_timeout, Duration(*etcd, "requestTimeout", out.request_timeout));
  return out;
}

Result<PodAttributes> ParseCniArgs(std::string_view cni_args) {
  NG_ASSIGN_OR_RETURN(cni::CniArgs args,
                      cni::CniArgs::Parse(cni_args, {"IP", "K8S_POD_NAMESPACE", "K8S_POD_NAME",
                                                     "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"}));
  if (auto ip = args.Get("IP"); ip && !ip->empty()) {
    return Error(kErrUnsupportedField,
                 "CNI_ARGS IP=" + *ip + ": cluster-ipam does not take requested addresses yet");
  }
  PodAttributes pod;
  pod.namespace_name = args.Get("K8S_POD_NAMESPACE").value_or("");
  pod.name = args.Get("K8S_POD_NAME").value_or("");
  pod.uid = args.Get("K8S_POD_UID").value_or("");
  pod.infra_container_id = args.Get("K8S_POD_INFRA_CONTAINER_ID").value_or("");
  return pod;
}

// A path of this node's: absolute, no NUL; a socket path must also fit sockaddr_un.
Status CheckLocalPath(const std::string& key, const std::string& path, bool may_be_empty) {
  if (path.empty() && may_be_empty) return OkStatus();
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    return ConfigError(key + " \"" + path + "\" must be an absolute path");
  }
  if (key == "ipam.agentSocket" && path.size() > kMaxSocketPath) {
    return ConfigError(key + " \"" + path + "\" is longer than a unix socket path may be (" +
                       std::to_string(kMaxSocketPath) + ")");
  }
  return OkStatus();
}

// Inputs host-local takes and cluster-ipam does not: a clear refusal, not a silent difference.
Status RefuseUnsupported(const cni::NetConf& conf) {
  if (const Json* ranges = json_field::GivenField(conf.runtime_config, "ipRanges")) {
    return Error(kErrUnsupportedField,
                 "runtimeConfig.ipRanges " + ranges->dump() +
                     ": cluster-ipam allocates from its pool only (drop the ipRanges capability)");
  }
  for (const auto& [object, path] :
       {std::pair{&conf.runtime_config, "runtimeConfig.ips"},
        std::pair{json_field::GivenField(conf.args, "cni"), "args.cni.ips"}}) {
    if (object == nullptr) continue;
    if (const Json* ips = json_field::GivenField(*object, "ips"); ips != nullptr && !ips->empty()) {
      return Error(kErrUnsupportedField,
                   std::string(path) + " " + ips->dump() +
                       ": cluster-ipam does not take requested addresses yet");
    }
  }
  return OkStatus();
}

}  // namespace

NodeNameSources NodeNameSources::FromProcess() {
  NodeNameSources sources;
  if (const char* env = std::getenv("KUBERNETES_NODE_NAME")) sources.environment = env;
  utsname name{};
  if (::uname(&name) == 0) sources.hostname = name.nodename;
  return sources;
}

const cni::gojson::Shape& ConfigShape() {
  using cni::gojson::Any;
  using cni::gojson::Field;
  using cni::gojson::ListOf;
  using cni::gojson::Null;
  using cni::gojson::Struct;
  static const cni::gojson::Shape shape = [] {
    const std::vector<Field> range = {{"rangeStart", Any()},
                                      {"rangeEnd", Any()},
                                      {"subnet", Any(), Null::kKeep},
                                      {"gateway", Any()},
                                      {"blockSize", Any(), Null::kKeep}};
    const auto etcd = Struct({{"endpoints", ListOf(Any())},
                              {"caFile", Any(), Null::kKeep},
                              {"certFile", Any(), Null::kKeep},
                              {"keyFile", Any(), Null::kKeep},
                              {"prefix", Any(), Null::kKeep},
                              {"username", Any(), Null::kKeep},
                              {"password", Any(), Null::kKeep},
                              {"timeout", Any(), Null::kKeep},
                              {"dialTimeout", Any(), Null::kKeep},
                              {"requestTimeout", Any(), Null::kKeep}});
    const auto ipam =
        cni::gojson::Embed({Struct(range)}, {{"type", Any(), Null::kKeep},
                                             {"routes", ListOf(cni::RouteShape())},
                                             {"resolvConf", Any(), Null::kKeep},
                                             {"ranges", ListOf(ListOf(Struct(range)))},
                                             {"nodeName", Any(), Null::kKeep},
                                             {"strictAffinity", Any(), Null::kKeep},
                                             {"agentSocket", Any(), Null::kKeep},
                                             {"lockDir", Any(), Null::kKeep},
                                             {"etcd", etcd}});
    return cni::NetConfShape({{"ipam", ipam}});
  }();
  return shape;
}

Result<ClusterConfig> LoadClusterConfig(const cni::NetConf& conf, std::string_view cni_args,
                                        Purpose purpose, const NodeNameSources& node_sources) {
  NG_ASSIGN_OR_RETURN(const Json* ipam_object,
                      json_field::ReadObject(conf.raw, "ipam").GetOr(nullptr, MustBeAt("")));
  if (ipam_object == nullptr) return ConfigError("IPAM config missing 'ipam' key");
  const Json& ipam = conf.ipam;
  ClusterConfig cfg;
  cfg.cni_version = conf.cni_version;
  cfg.network_name = conf.name;
  NG_RETURN_IF_ERROR(cni::ValidateNetworkName(cfg.network_name));
  NG_ASSIGN_OR_RETURN(cfg.etcd, ParseEtcd(ipam));
  NG_ASSIGN_OR_RETURN(cfg.node_name,
                      json_field::ReadString(ipam, "nodeName").GetOr("", MustBeAt("ipam.")));
  if (cfg.node_name.empty()) cfg.node_name = node_sources.environment;
  if (cfg.node_name.empty()) cfg.node_name = node_sources.hostname;
  if (!ValidNodeName(cfg.node_name)) {
    return ConfigError("node name \"" + cfg.node_name +
                       "\" (ipam.nodeName, else $KUBERNETES_NODE_NAME, else the host name) must "
                       "be 1 to 253 of a-z, A-Z, 0-9, '.', '-', '_'");
  }
  NG_ASSIGN_OR_RETURN(cfg.strict_affinity,
                      json_field::ReadBool(ipam, "strictAffinity").GetOr(false, MustBeAt("ipam.")));
  NG_ASSIGN_OR_RETURN(cfg.agent_socket,
                      json_field::ReadString(ipam, "agentSocket")
                          .GetOr(std::string(kDefaultAgentSocket), MustBeAt("ipam.")));
  NG_ASSIGN_OR_RETURN(cfg.lock_dir, json_field::ReadString(ipam, "lockDir")
                                        .GetOr(std::string(kDefaultLockDir), MustBeAt("ipam.")));
  NG_RETURN_IF_ERROR(CheckLocalPath("ipam.agentSocket", cfg.agent_socket, true));
  NG_RETURN_IF_ERROR(CheckLocalPath("ipam.lockDir", cfg.lock_dir, false));
  if (purpose == Purpose::kRelease) return cfg;

  NG_RETURN_IF_ERROR(RefuseUnsupported(conf));
  NG_ASSIGN_OR_RETURN(cfg.pod, ParseCniArgs(cni_args));
  NG_ASSIGN_OR_RETURN(cfg.resolv_conf,
                      json_field::ReadString(ipam, "resolvConf").GetOr("", MustBeAt("ipam.")));
  NG_ASSIGN_OR_RETURN(cfg.routes, ParseRoutes(ipam));
  NG_ASSIGN_OR_RETURN(cfg.pool, ParsePool(ipam, conf.cni_version));
  return cfg;
}

Status ValidateConfig(const cni::NetConf& conf) {
  NG_ASSIGN_OR_RETURN(ClusterConfig cfg, LoadClusterConfig(conf, "", Purpose::kAllocate,
                                                           NodeNameSources::FromProcess()));
  (void)cfg;
  return OkStatus();
}

etcd::ClientOptions ClientOptionsFor(const ClusterConfig& cfg,
                                     std::optional<etcd::Deadline> deadline) {
  etcd::ClientOptions options;
  options.endpoints = cfg.etcd.endpoints;
  options.tls = cfg.etcd.tls;
  options.username = cfg.etcd.username;
  options.password = cfg.etcd.password;
  options.timeout = cfg.etcd.timeout;
  options.dial_timeout = cfg.etcd.dial_timeout;
  options.request_timeout = cfg.etcd.request_timeout;
  options.deadline = deadline;
  options.first_endpoint = static_cast<size_t>(StableHash(cfg.node_name));
  return options;
}

}  // namespace nodegate::ipam::cluster
