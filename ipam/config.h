#pragma once
// The host-local configuration: the "ipam" object of the network config plus the
// per-attachment inputs (runtimeConfig.ipRanges, runtimeConfig.ips, args.cni.ips and CNI_ARGS
// IP=), parsed, defaulted and validated in one pure step before any file is touched.
//
// Range-set order is the reference's: runtimeConfig.ipRanges..., then the legacy top-level
// range (ipam.subnet/rangeStart/rangeEnd/gateway), then ipam.ranges... The index in that
// list is the N of last_reserved_ip.N.
//
// Error codes: 6 when a key has the wrong JSON type, 7 for every other invalid value (with the
// reference's text where it has one), 4 for a malformed CNI_ARGS.
//
//   NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(args.conf, args.args, Verb::kAdd));

#include <string>
#include <string_view>
#include <vector>

#include "ipam/range.h"
#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"
#include "lib/net/ip.h"

namespace nodegate::ipam {

inline constexpr std::string_view kDefaultDataDir = "/var/lib/cni/networks";

// What the config is loaded for. ADD, DEL and CHECK validate everything, as the reference
// does. GC only needs the store location; STATUS tolerates a config whose ranges come only
// from the ipRanges capability (there is nothing to judge then).
enum class Verb { kAdd, kDel, kCheck, kGc, kStatus };

struct IpamConfig {
  std::string cni_version;
  std::string network_name;  // the top-level "name"; the state directory's name
  std::string data_dir;      // "dataDir", default kDefaultDataDir
  std::string resolv_conf;   // "resolvConf" path, "" when unset
  std::vector<RangeSet> range_sets;
  std::vector<cni::Route> routes;
  // Requested addresses, merged in the reference's order (CNI_ARGS IP, args.cni.ips,
  // runtimeConfig.ips), canonical and without duplicates.
  std::vector<net::IpAddress> requested_ips;

  // <data_dir>/<network_name>
  std::string NetworkDir() const { return data_dir + "/" + network_name; }
};

// The reference's host-local Net struct as Go decodes it (keys matched as lib/cni/go_json.h
// says): ipam (IPAMConfig with its embedded Range), runtimeConfig.ipRanges/ips, args.cni.ips.
const cni::gojson::Shape& ConfigShape();

Result<IpamConfig> LoadIpamConfig(const cni::NetConf& conf, std::string_view cni_args, Verb verb);

// The readers of the keys host-local shares with cluster-ipam (ipam/cluster/config.h), with
// host-local's errors (code 6 for a wrong JSON type naming the path, 7 for invalid values):
//   ParseRangeSpec   one Range object {subnet, rangeStart, rangeEnd, gateway} at `path`
//                    ("ipam.ranges[0][1]."), before defaults
//   ParseRangeSets   the [[Range, ...], ...] list under `key` of `object` ("ranges", the
//                    ipRanges capability); a null set is an empty one
//   ParseRoutes      ipam.routes
//   CanonicalizeRangeSets  defaults and checks of each set ("invalid range set N: ..."), then
//                    the checks across sets: one address per family before CNI 0.3.0, and no
//                    two sets overlapping
Result<RangeSpec> ParseRangeSpec(const cni::Json& obj, const std::string& path);
Result<std::vector<std::vector<RangeSpec>>> ParseRangeSets(const cni::Json& object, const char* key,
                                                           const std::string& path);
Result<std::vector<cni::Route>> ParseRoutes(const cni::Json& ipam);
Result<std::vector<RangeSet>> CanonicalizeRangeSets(
    const std::vector<std::vector<RangeSpec>>& specs, const std::string& cni_version);

// The validation the plugin runs for ADD, without per-attachment inputs: the network name,
// every ipam key, the range sets and routes. For `nodegate conf validate` and the like.
// A config whose ranges come only from the runtime's ipRanges capability fails with
// "no IP ranges specified", as the reference's ADD would without that capability.
Status ValidateConfig(const cni::NetConf& conf);

// Network names and dataDir must not escape the data directory: the name is one path
// component matching the CNI name rule, dataDir has no ".." component. Errors: code 7.
Status ValidateStorePath(const std::string& data_dir, const std::string& network_name);

}  // namespace nodegate::ipam
