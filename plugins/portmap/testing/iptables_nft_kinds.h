#pragma once
// Every rule kind of the iptables layout, per family, for the iptables-nft encoder's unit and
// netns tests: the planner's own output (BuildPlan) for configs that cover tcp/udp/sctp,
// with and without hostIP, hairpin and localhost SETMARK rules, masqAll, a >15-port split,
// two marks and conditions, plus hand-made header conditions (-s/-d/-i/-o, "!", prefixes
// on and off octet boundaries, "eth+" and "+").

#include <linux/netfilter/nf_tables.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "lib/netfilter/nlattr.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::testing {

struct RuleKind {
  std::string chain;
  ipt::Rule rule;
  bool insert_first = false;
};

inline PortMapping Mapping(int host, int container, Protocol protocol, const char* host_ip = "") {
  PortMapping m;
  m.host_port = host;
  m.container_port = container;
  m.protocol = protocol;
  if (*host_ip != '\0') m.host_ip = net::IpAddress::Parse(host_ip);
  return m;
}

inline Config KindsConfig(const std::string& id) {
  Config c;
  c.network_name = "rnet";
  c.container_id = id;
  c.ifname = "eth0";
  c.container_v4 = net::IpPrefix::Parse("10.88.0.2/16");
  c.container_v6 = net::IpPrefix::Parse("fd00:88::2/64");
  return c;
}

// The configs whose plans the kinds come from.
inline std::vector<Config> KindsConfigs() {
  Config a = KindsConfig("ctr1");
  a.mappings = {Mapping(8080, 80, Protocol::kTcp, "10.88.0.1"),
                Mapping(5353, 53, Protocol::kUdp),
                Mapping(9091, 91, Protocol::kSctp),
                Mapping(9090, 90, Protocol::kTcp, "fd00:88::1"),
                Mapping(7000, 70, Protocol::kSctp, "10.88.0.1"),
                Mapping(7001, 71, Protocol::kUdp, "fd00:88::1")};
  Config b = KindsConfig("ctr2");
  b.masq_all = true;
  b.mark_masq_bit = 5;
  for (int i = 0; i < 16; ++i) b.mappings.push_back(Mapping(9100 + i, 80, Protocol::kTcp));
  b.mappings.push_back(Mapping(9200, 80, Protocol::kUdp));
  b.conditions_v4 = *ParseConditions(
      {"!", "-d", "192.0.2.0/24", "-i", "eth0", "!", "-o", "veth+", "-s", "10.0.0.0/8"},
      net::Family::kV4);
  b.conditions_v6 =
      *ParseConditions({"-s", "fd00::/60", "!", "-i", "+", "-o", "veth0"}, net::Family::kV6);
  return {a, b};
}

// Header-only condition rules in a user chain, jumping to CNI-HOSTPORT-SETMARK.
inline std::vector<RuleKind> ConditionKinds(net::Family family) {
  const bool v4 = family == net::Family::kV4;
  auto prefix = [](const char* text) { return net::IpPrefix::Parse(text, true)->Masked(); };
  std::vector<ipt::Header> headers(9);
  headers[0].src = prefix(v4 ? "10.123.0.0/24" : "fd00:1::/64");
  headers[1].src = prefix(v4 ? "10.123.0.0/23" : "fd00:1::/60");
  headers[1].src_invert = true;
  headers[2].dst = prefix(v4 ? "10.1.2.3" : "fd00::1");
  headers[2].in_iface = "+";
  headers[3].dst = prefix(v4 ? "128.0.0.0/1" : "8000::/1");
  headers[3].dst_invert = true;
  headers[3].in_iface = "+";
  headers[3].in_invert = true;
  headers[4].in_iface = "eth+";
  headers[4].out_iface = "eth0";
  headers[4].out_invert = true;
  headers[5].in_iface = "veth1";
  headers[5].in_invert = true;
  headers[5].out_iface = "+";
  headers[5].out_invert = true;
  headers[6].protocol = Protocol::kUdp;
  headers[6].src = prefix(v4 ? "192.168.7.0/31" : "fd00:2::/127");
  headers[7].protocol = Protocol::kSctp;
  headers[7].dst = prefix(v4 ? "0.0.0.0/0" : "::/0");  // matches everything: encodes nothing
  headers[8].out_iface = "abcdefghijklmn+";            // longest wildcard
  std::vector<RuleKind> out;
  for (size_t i = 0; i < headers.size(); ++i) {
    std::vector<ipt::Match> matches;
    if (headers[i].protocol) {
      matches.emplace_back(ipt::PortMatch{*headers[i].protocol, 4000 + static_cast<int>(i)});
    }
    out.push_back({"COND", ipt::Rule{headers[i], matches, ipt::JumpTarget{ipt::kSetMarkChain}}});
  }
  return out;
}

// Every kind for `family`, in the order an ADD would write them.
inline std::vector<RuleKind> AllKinds(net::Family family) {
  std::vector<RuleKind> out;
  for (const Config& config : KindsConfigs()) {
    const ipt::Plan plan = ipt::BuildPlan(config, family);
    for (const auto& shared : plan.shared_rules) {
      out.push_back({shared.chain, shared.rule, shared.insert_first});
    }
    for (const auto& rule : plan.container_rules) out.push_back({plan.container_chain, rule});
    for (const auto& rule : plan.entry_rules) out.push_back({ipt::kDnatChain, rule});
  }
  for (auto& kind : ConditionKinds(family)) out.push_back(std::move(kind));
  return out;
}

inline bool IsBuiltinChain(const std::string& chain) {
  return chain == "PREROUTING" || chain == "INPUT" || chain == "OUTPUT" || chain == "POSTROUTING";
}

// The user chains the kinds live in or jump to.
inline std::set<std::string> UserChains(const std::vector<RuleKind>& kinds) {
  std::set<std::string> out;
  for (const auto& kind : kinds) {
    if (!IsBuiltinChain(kind.chain)) out.insert(kind.chain);
    if (const auto* jump = std::get_if<ipt::JumpTarget>(&kind.rule.target)) out.insert(jump->chain);
  }
  return out;
}

inline std::string HexOf(const std::vector<uint8_t>& bytes) {
  std::string out;
  char buf[3];
  for (uint8_t b : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

// The attributes of the NEWRULE message NftNatTable sends for `rule` (TABLE, CHAIN,
// EXPRESSIONS, COMPAT), in hex; "error: ..." when the rule does not encode.
inline std::string RuleMessageHex(const std::string& chain, const ipt::Rule& rule,
                                  net::Family family) {
  auto encoded = ipt::EncodeNftRule(rule, family);
  if (!encoded.ok()) return "error: " + encoded.error().msg;
  netfilter::AttrWriter a;
  a.PutString(NFTA_RULE_TABLE, "nat");
  a.PutString(NFTA_RULE_CHAIN, chain);
  const size_t exprs = a.BeginNested(NFTA_RULE_EXPRESSIONS);
  a.Append(encoded->expressions);
  a.EndNested(exprs);
  const size_t compat = a.BeginNested(NFTA_RULE_COMPAT);
  a.Append(encoded->compat);
  a.EndNested(compat);
  return HexOf(a.bytes());
}

}  // namespace nodegate::portmap::testing
