// bandwidth's stdin config: NetConf with bandwidth's shape, then ParseBandwidthConfig (rates,
// bursts, subnets from the top level or runtimeConfig.bandwidth).

#include "lib/cni/conf.h"
#include "plugins/bandwidth/config.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(bandwidth_config) {
  const auto conf = cni::ParseNetConf(data, bandwidth::ConfigShape());
  if (!conf.ok()) {
    CheckErrorPrints(conf.error());
    return;
  }
  const auto config = bandwidth::ParseBandwidthConfig(*conf);
  const auto status = bandwidth::ValidateConfig(*conf);
  NG_FUZZ_CHECK(config.ok() == status.ok());
  if (!config.ok()) {
    CheckErrorPrints(config.error());
    return;
  }
  // Subnets are stored masked: masking again changes nothing.
  for (const auto& subnet : config->subnets) {
    NG_FUZZ_CHECK(subnet.Masked() == subnet);
  }
}
