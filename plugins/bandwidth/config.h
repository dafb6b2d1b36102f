#pragma once
// The bandwidth plugin's configuration: the reference's four keys (bits per second and bits,
// top level or runtimeConfig.bandwidth) plus unshapedSubnets/shapedSubnets. Parsing applies
// every rule up front, before any kernel call, and is exposed for `nodegate conf validate`:
//
//   Status s = bandwidth::ValidateConfig(conf);  // same checks the plugin runs on every verb
//
// Precedence (as the reference): when any of ingressRate/ingressBurst/egressRate/egressBurst
// is present at the top level, the top-level values are used and runtimeConfig.bandwidth's
// rates are ignored. Subnets come from runtimeConfig.bandwidth when it names one of the two
// subnet keys, else from the top level (so an operator can pin the cluster network in the
// conflist while the runtime supplies per-pod rates).

#include <cstdint>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/net/ip.h"

namespace nodegate::bandwidth {

struct Direction {
  uint64_t rate_bits = 0;   // bits per second
  uint64_t burst_bits = 0;  // bits
  bool enabled() const { return rate_bits > 0 && burst_bits > 0; }
};

enum class SubnetMode {
  kAll,       // no subnet lists: everything is shaped (the reference's behaviour)
  kUnshaped,  // unshapedSubnets: everything except these destinations is shaped
  kShaped,    // shapedSubnets: only these destinations are shaped
};

struct BandwidthConfig {
  Direction ingress;  // traffic to the container
  Direction egress;   // traffic from the container
  SubnetMode subnet_mode = SubnetMode::kAll;
  std::vector<net::IpPrefix> subnets;  // masked; meaningful unless kAll
  bool shapes_anything() const { return ingress.enabled() || egress.enabled(); }
};

// The reference's PluginConf as Go decodes it (keys matched as lib/cni/go_json.h says).
const cni::gojson::Shape& ConfigShape();

// Parses and validates. Errors are code 7 (invalid network config); the message is the first
// problem in the reference's order with the reference's words where it has them, and `details`
// lists every problem found when there is more than one.
Result<BandwidthConfig> ParseBandwidthConfig(const cni::NetConf& conf);

// The validation alone, for tools.
Status ValidateConfig(const cni::NetConf& conf);

}  // namespace nodegate::bandwidth
