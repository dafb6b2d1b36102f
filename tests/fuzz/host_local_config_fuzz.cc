// host-local's stdin config: NetConf with host-local's shape, then LoadIpamConfig for each
// verb. An input whose first line starts with "CNI_ARGS=" gives the rest of that line as
// CNI_ARGS (IP=... requests) and the remaining lines as the config.

#include <string_view>

#include "ipam/config.h"
#include "lib/cni/conf.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

constexpr std::string_view kArgsPrefix = "CNI_ARGS=";

struct HostLocalInput {
  std::string_view cni_args;
  std::string_view config;
};

HostLocalInput SplitArgs(std::string_view data) {
  if (!data.starts_with(kArgsPrefix)) {
    return {{}, data};
  }
  const size_t newline = data.find('\n');
  if (newline == std::string_view::npos) {
    return {data.substr(kArgsPrefix.size()), {}};
  }
  return {data.substr(kArgsPrefix.size(), newline - kArgsPrefix.size()), data.substr(newline + 1)};
}

void CheckLoaded(const ipam::IpamConfig& config) {
  // The state directory is <dataDir>/<name>: what is loaded for ADD never escapes it.
  NG_FUZZ_CHECK(ipam::ValidateStorePath(config.data_dir, config.network_name).ok());
  for (const auto& ip : config.requested_ips) {
    NG_FUZZ_CHECK(net::IpAddress::Parse(ip.ToString()) == ip);
  }
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(host_local_config) {
  const HostLocalInput input = SplitArgs(data);
  const auto conf = cni::ParseNetConf(input.config, ipam::ConfigShape());
  if (!conf.ok()) {
    CheckErrorPrints(conf.error());
    return;
  }
  for (const auto verb : {ipam::Verb::kAdd, ipam::Verb::kDel, ipam::Verb::kCheck, ipam::Verb::kGc,
                          ipam::Verb::kStatus}) {
    const auto config = ipam::LoadIpamConfig(*conf, input.cni_args, verb);
    if (!config.ok()) {
      CheckErrorPrints(config.error());
    } else if (verb == ipam::Verb::kAdd) {
      CheckLoaded(*config);
    }
  }
  const auto status = ipam::ValidateConfig(*conf);
  if (!status.ok()) {
    CheckErrorPrints(status.error());
  }
}
