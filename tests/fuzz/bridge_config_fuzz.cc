// bridge's stdin config and CNI_ARGS: NetConf with bridge's shape, then ParseBridgeConfig. An
// input whose first line starts with "CNI_ARGS=" gives the rest of that line as CNI_ARGS (its
// MAC key) and the remaining lines as the config. What parses is within the kernel's limits.

#include <algorithm>
#include <string>
#include <string_view>

#include "lib/cni/conf.h"
#include "plugins/bridge/config.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

constexpr std::string_view kBridgeArgsPrefix = "CNI_ARGS=";

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(bridge_config) {
  std::string_view cni_args, config = data;
  if (data.starts_with(kBridgeArgsPrefix)) {
    const size_t newline = data.find('\n');
    cni_args = data.substr(kBridgeArgsPrefix.size(), newline == std::string_view::npos
                                                         ? std::string_view::npos
                                                         : newline - kBridgeArgsPrefix.size());
    config = newline == std::string_view::npos ? std::string_view() : data.substr(newline + 1);
  }
  const auto conf = cni::ParseNetConf(config, bridge::ConfigShape());
  if (!conf.ok()) {
    CheckErrorPrints(conf.error());
    return;
  }
  const auto parsed = bridge::ParseBridgeConfig(*conf, std::string(cni_args));
  // The validation tools run is the parse without CNI_ARGS.
  NG_FUZZ_CHECK(bridge::ValidateConfig(*conf).ok() == bridge::ParseBridgeConfig(*conf, "").ok());
  if (!parsed.ok()) {
    CheckErrorPrints(parsed.error());
    return;
  }
  const bridge::BridgeConfig& c = *parsed;
  NG_FUZZ_CHECK(!c.bridge.empty() && c.bridge.size() <= 15);
  NG_FUZZ_CHECK(c.mtu == 0 || (c.mtu >= 68 && c.mtu <= 65535));
  NG_FUZZ_CHECK(c.vlan <= 4094);
  NG_FUZZ_CHECK(std::is_sorted(c.trunk.begin(), c.trunk.end()));
  NG_FUZZ_CHECK(std::adjacent_find(c.trunk.begin(), c.trunk.end()) == c.trunk.end());
  NG_FUZZ_CHECK(!(c.hairpin && c.promisc));
  NG_FUZZ_CHECK(!c.is_default_gateway || c.is_gateway);
}
