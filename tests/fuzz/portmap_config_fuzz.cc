// portmap's stdin config: NetConf with portmap's shape, ParseConfig for each verb, then the
// rules a parsed ADD config turns into (iptables plan per family, its libiptc and
// iptables-nft encodings, the nftables plans encoded as netlink batches). Names and comments come
// from hostile strings (network name, container ID, conditions), so this is where an overrun
// would show.

#include "lib/cni/conf.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/iptables/legacy/encode.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/rules.h"
#include "plugins/portmap/nftables/rules.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

using portmap::Config;
using portmap::Purpose;

// What iptables-nft encodes must decode to the same rule (SameNftRule is `iptables -C`).
void CheckRuleEncodings(const portmap::ipt::Rule& rule, net::Family family) {
  (void)portmap::ipt::EncodeRule(rule, family);
  (void)rule.ToString();
  const auto encoded = portmap::ipt::EncodeNftRule(rule, family);
  if (!encoded.ok()) {
    CheckErrorPrints(encoded.error());
    return;
  }
  const auto decoded = portmap::ipt::DecodeNftRule(encoded->expressions, family);
  NG_FUZZ_CHECK(decoded.has_value() && portmap::ipt::SameNftRule(*decoded, rule));
}

void BuildIptablesPlans(const Config& config) {
  for (const net::Family family : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(family)) {
      continue;
    }
    const auto plan = portmap::ipt::BuildPlan(config, family);
    for (const auto& shared : plan.shared_rules) {
      CheckRuleEncodings(shared.rule, family);
    }
    for (const auto& rule : plan.container_rules) {
      CheckRuleEncodings(rule, family);
    }
    for (const auto& rule : plan.entry_rules) {
      CheckRuleEncodings(rule, family);
    }
  }
}

void BuildNftablesPlans(const Config& config) {
  portmap::nft::Plan plan;
  portmap::nft::AppendSetup(config, portmap::nft::HairpinLengthsOf(config), plan);
  portmap::nft::AppendAdd(config, true, true, plan);
  NG_FUZZ_CHECK(plan.ToBatch().changes() == plan.steps().size());
  portmap::nft::Plan del;
  (void)portmap::nft::AppendDelete(config, {net::Family::kV4, net::Family::kV6}, del);
  (void)del.ToBatch();
  (void)portmap::nft::ExpectedObjects(config);
  (void)portmap::nft::NetworkChainRuleCounts(config, portmap::nft::HairpinLengthsOf(config));
  NG_FUZZ_CHECK(portmap::nft::NetworkComment(config.network_name).size() <=
                portmap::nft::kMaxCommentBytes);
}

void ParseFor(const cni::NetConf& conf, Purpose purpose) {
  auto config = portmap::ParseConfig(
      conf, {.container_id = "0123abcd", .ifname = "eth0", .purpose = purpose});
  if (!config.ok()) {
    CheckErrorPrints(config.error());
    return;
  }
  if (purpose == Purpose::kAdd) {
    BuildIptablesPlans(*config);
    BuildNftablesPlans(*config);
  }
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(portmap_config) {
  const auto del =
      cni::ParseNetConf(data, portmap::ConfigShape(), cni::Strictness::kNameAndVersion);
  if (del.ok()) {
    ParseFor(*del, Purpose::kDel);
  }
  const auto conf = cni::ParseNetConf(data, portmap::ConfigShape());
  if (!conf.ok()) {
    CheckErrorPrints(conf.error());
    return;
  }
  for (const auto purpose : {Purpose::kAdd, Purpose::kGc, Purpose::kValidate}) {
    ParseFor(*conf, purpose);
  }
  const auto status = portmap::ValidateConfig(*conf);
  if (!status.ok()) {
    CheckErrorPrints(status.error());
  }
}
