// The nftables backend's plans as data: the objects, rules (as nft's debug text) and elements
// each config turns into, with their roles; DEL's and re-ADD's plans; CHECK's objects; the
// legacy hairpin set's migration; and how refusals read. tests/portmap/nftables_netns_test.cc
// checks the same plans against the kernel and nft's own encoding.
#include "plugins/portmap/nftables/rules.h"

// clang-format off
#include <netinet/in.h>
// clang-format on
#include <gtest/gtest.h>
#include <linux/netfilter/nf_tables.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using netfilter::ElementChange;
using netfilter::ElementVerb;
using nft::Role;
using testing::ConfText;
using testing::Parse;

Config MustParse(const std::string& extra, const std::string& mappings = testing::kMappings,
                 Purpose purpose = Purpose::kAdd) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")" + extra, mappings), purpose);
  EXPECT_TRUE(config.ok()) << config.error().msg;
  return config.ok() ? *config : Config{};
}

const ElementChange& Elements(const nft::Step& step) {
  return std::get<ElementChange>(step.change);
}

// The fast ADD: the netcfg assertion, then per family the marker, the records, one change per
// map and per hairpin set (the container's subnet, then IPv4's 127.0.0.0/8), in register
// layout, with the roles refusals are classified by.
TEST(NftablesRules, AddPlanInRegisterLayout) {
  const Config config = MustParse("");
  nft::Plan plan;
  nft::AppendAdd(config, true, true, plan);
  const auto names = nft::NamesFor("rnet");
  std::vector<std::tuple<ElementVerb, std::string, Role>> order;
  for (const auto& step : plan.steps()) {
    order.emplace_back(Elements(step).verb, Elements(step).set, step.role);
  }
  using F = net::Family;
  const std::vector<std::tuple<ElementVerb, std::string, Role>> expected = {
      {ElementVerb::kDelete, "netcfg", Role::kNetcfg},
      {ElementVerb::kAdd, "netcfg", Role::kOther},
      {ElementVerb::kCreate, "owned", Role::kMarker},
      {ElementVerb::kAdd, "owned", Role::kOther},
      {ElementVerb::kCreate, names.DnatIp(F::kV4), Role::kElement},
      {ElementVerb::kCreate, names.DnatAny(F::kV4), Role::kElement},
      {ElementVerb::kAdd, names.HairpinIp(F::kV4, 16), Role::kHairpin},
      {ElementVerb::kAdd, names.HairpinAny(F::kV4, 16), Role::kHairpin},
      {ElementVerb::kAdd, names.HairpinIp(F::kV4, 8), Role::kHairpin},
      {ElementVerb::kAdd, names.HairpinAny(F::kV4, 8), Role::kHairpin},
      {ElementVerb::kCreate, "owned", Role::kMarker},
      {ElementVerb::kAdd, "owned", Role::kOther},
      {ElementVerb::kCreate, names.DnatAny(F::kV6), Role::kElement},
      {ElementVerb::kAdd, names.HairpinAny(F::kV6, 64), Role::kHairpin},
  };
  EXPECT_EQ(order, expected);
  EXPECT_EQ(plan.steps()[4].subject, "10.88.0.1 . tcp . 8080");
  EXPECT_EQ(plan.steps()[5].subject, "udp . 5353");
  // netcfg: the prefix as an ifname, then the config hash in host byte order.
  const auto& netcfg = Elements(plan.steps()[0]).elements.at(0).key;
  ASSERT_EQ(netcfg.size(), 20u);
  uint32_t hash = 0;
  std::memcpy(&hash, netcfg.data() + 16, 4);
  EXPECT_EQ(hash, nft::ConfigHash(config));
  // 10.88.0.1 . tcp . 8080 : 10.88.0.2 . 80, commented with the container ID.
  const auto& by_ip = Elements(plan.steps()[4]).elements.at(0);
  EXPECT_EQ(by_ip.key, (std::vector<uint8_t>{10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  EXPECT_EQ(by_ip.data, (std::vector<uint8_t>{10, 88, 0, 2, 0, 80, 0, 0}));
  EXPECT_EQ(by_ip.comment, "ctr1");
  EXPECT_EQ(Elements(plan.steps()[5]).elements.at(0).key,
            (std::vector<uint8_t>{17, 0, 0, 0, 0x14, 0xe9, 0, 0}));  // udp . 5353
  // The mapping's hairpin element, in the set of /16 subnets: the container's subnet
  // 10.88.0.0, then the map key; commented like the map element.
  const auto& hairpin = Elements(plan.steps()[7]).elements.at(0);
  EXPECT_EQ(hairpin.key, (std::vector<uint8_t>{10, 88, 0, 0, 17, 0, 0, 0, 0x14, 0xe9, 0, 0}));
  EXPECT_TRUE(hairpin.key_end.empty());
  EXPECT_EQ(hairpin.comment, "ctr1");
  EXPECT_FALSE(hairpin.interval_end);
  const auto& hairpin_ip = Elements(plan.steps()[6]).elements.at(0);
  EXPECT_EQ(hairpin_ip.key,
            (std::vector<uint8_t>{10, 88, 0, 0, 10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  // The localhost source of each IPv4 mapping: 127.0.0.0 (/8), then the map key.
  const auto& localhost_ip = Elements(plan.steps()[8]).elements.at(0);
  EXPECT_EQ(localhost_ip.key,
            (std::vector<uint8_t>{127, 0, 0, 0, 10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  EXPECT_EQ(localhost_ip.comment, "ctr1");
  EXPECT_EQ(Elements(plan.steps()[9]).elements.at(0).key,
            (std::vector<uint8_t>{127, 0, 0, 0, 17, 0, 0, 0, 0x14, 0xe9, 0, 0}));
  // One ownership record per mapping, tagged as every version tagged them.
  const auto elements = nft::ContainerElements(config, net::Family::kV4);
  ASSERT_EQ(Elements(plan.steps()[3]).elements.size(), elements.size());
  EXPECT_EQ(Elements(plan.steps()[3]).elements[1].key,
            netfilter::IfnameKey({nft::OwnerTag("rnet", "ctr1"), elements[1].Tag()}));
  EXPECT_EQ(elements[1].Tag(), "a5ecdfdc94ea080");  // unchanged since the first layout

  // A subnet that spans the address space is a length like any other.
  auto everything =
      Parse(std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",)") +
            R"("backend":"nftables","runtimeConfig":{"portMappings":)" + testing::kMappings +
            R"(},"prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.88.0.2/0"}]}})");
  ASSERT_TRUE(everything.ok()) << everything.error().msg;
  nft::Plan wide;
  nft::AppendAdd(*everything, true, true, wide);
  const auto& all = Elements(wide.steps()[7]);
  EXPECT_EQ(all.set, names.HairpinAny(F::kV4, 0));
  EXPECT_EQ(
      std::vector<uint8_t>(all.elements.at(0).key.begin(), all.elements.at(0).key.begin() + 4),
      (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(nft::HairpinLengthsOf(*everything), (nft::HairpinLengths{{0, 8}, {}}));
  // snat false: no hairpin elements.
  nft::Plan plain;
  nft::AppendAdd(MustParse(R"(,"snat":false)"), true, true, plain);
  for (const auto& step : plain.steps()) EXPECT_NE(step.role, Role::kHairpin);
  EXPECT_EQ(nft::HairpinLengthsOf(MustParse(R"(,"snat":false)")), nft::HairpinLengths{});
  // masqAll: every source, 0.0.0.0/0 and ::/0, in both families; no subnet, no localhost.
  const Config masq_all = MustParse(R"(,"masqAll":true)");
  EXPECT_EQ(nft::HairpinLengthsOf(masq_all), (nft::HairpinLengths{{0}, {0}}));
  nft::Plan every;
  nft::AppendAdd(masq_all, true, true, every);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> hairpin_elements;
  for (const auto& step : every.steps()) {
    if (step.role != Role::kHairpin) continue;
    for (const auto& e : Elements(step).elements) {
      hairpin_elements.emplace_back(Elements(step).set, e.key);
    }
  }
  const std::vector<uint8_t> any6(16, 0);
  std::vector<uint8_t> any6_udp = any6;
  any6_udp.insert(any6_udp.end(), {17, 0, 0, 0, 0x14, 0xe9, 0, 0});
  EXPECT_EQ(
      hairpin_elements,
      (std::vector<std::pair<std::string, std::vector<uint8_t>>>{
          {names.HairpinIp(F::kV4, 0), {0, 0, 0, 0, 10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}},
          {names.HairpinAny(F::kV4, 0), {0, 0, 0, 0, 17, 0, 0, 0, 0x14, 0xe9, 0, 0}},
          {names.HairpinAny(F::kV6, 0), any6_udp}}));
}

// A pod with many host ports is one change per map and per hairpin set, whatever its size.
TEST(NftablesRules, ManyMappingsAreOneChangePerSet) {
  std::string many = "[";
  for (int port = 20000; port < 22000; ++port) {
    many += (port > 20000 ? "," : "") + std::string(R"({"hostPort":)") + std::to_string(port) +
            R"(,"containerPort":53,"protocol":"udp"})";
  }
  many += "]";
  nft::Plan plan;
  nft::AppendAdd(MustParse("", many), true, true, plan);
  // netcfg x2; per family marker, records, map, hairpin (and IPv4's localhost hairpin)
  EXPECT_EQ(plan.steps().size(), 2u + 5 + 4);
  EXPECT_EQ(Elements(plan.steps()[4]).elements.size(), 2000u);
  EXPECT_EQ(plan.steps()[4].subject, "");  // several keys: the refusal's listing names one
  // Its batch splits the big changes into messages but keeps one index per change.
  EXPECT_EQ(plan.ToBatch().changes(), plan.steps().size());
}

// The usual DEL: markers, records, map and hairpin elements of the ADD's mappings; the kernel
// checks every one of them in the same transaction.
TEST(NftablesRules, DeletePlanNamesEverythingTheAddWrote) {
  const Config config = MustParse("", testing::kMappings, Purpose::kDel);
  nft::Plan del;
  ASSERT_TRUE(nft::AppendDelete(config, {net::Family::kV4, net::Family::kV6}, del));
  ASSERT_FALSE(del.empty());
  EXPECT_EQ(del.steps().front().role, Role::kMarker);
  nft::Plan add;
  nft::AppendAdd(config, false, true, add);
  // Every element the ADD adds (netcfg aside), the DEL deletes by key.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> added, deleted;
  for (const auto& step : add.steps()) {
    for (const auto& e : Elements(step).elements) added.emplace_back(Elements(step).set, e.key);
  }
  for (const auto& step : del.steps()) {
    EXPECT_EQ(Elements(step).verb, ElementVerb::kDelete);
    for (const auto& e : Elements(step).elements) deleted.emplace_back(Elements(step).set, e.key);
  }
  std::sort(added.begin(), added.end());
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(added, deleted);
  // Without mappings, or without the container's subnet where hairpin elements were written,
  // the DEL cannot name them: the listing path.
  nft::Plan none;
  EXPECT_FALSE(nft::AppendDelete(MustParse("", "[]", Purpose::kDel), {net::Family::kV4}, none));
  auto unknown =
      Parse(ConfText(R"(,"backend":"nftables")", testing::kMappings, false), Purpose::kDel);
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(nft::AppendDelete(*unknown, {net::Family::kV4}, none));
  EXPECT_TRUE(none.empty());
  auto no_hairpin = Parse(
      ConfText(R"(,"backend":"nftables","snat":false)", testing::kMappings, false), Purpose::kDel);
  ASSERT_TRUE(no_hairpin.ok());
  EXPECT_TRUE(nft::AppendDelete(*no_hairpin, {net::Family::kV4}, none));
  // masqAll's sources do not depend on the container: its DEL names them without prevResult.
  auto masq_all =
      Parse(ConfText(R"(,"backend":"nftables","masqAll":true)", testing::kMappings, false),
            Purpose::kDel);
  ASSERT_TRUE(masq_all.ok());
  nft::Plan every;
  EXPECT_TRUE(nft::AppendDelete(*masq_all, {net::Family::kV4}, every));
  size_t hairpin = 0;
  for (const auto& step : every.steps()) {
    if (step.role == Role::kHairpin) hairpin += Elements(step).elements.size();
  }
  EXPECT_EQ(hairpin, 2u);
}

// The network's objects: sets and maps with nft's type numbers and user data, the base chains
// with their hooks, and the rules, expression for expression as nft 1.0.6 writes the same text
// (the expected lines are its `nft --debug=netlink` output for the layout of rules.h).
TEST(NftablesRules, SetupObjectsAndRules) {
  const Config config = MustParse("");
  nft::Plan plan;
  const nft::HairpinLengths lengths = nft::HairpinLengthsOf(config);
  EXPECT_EQ(lengths, (nft::HairpinLengths{{8, 16}, {64}}));
  nft::AppendSetup(config, lengths, plan);
  const auto names = nft::NamesFor("rnet");
  std::vector<std::string> sets, chains;
  size_t rules = 0, features = 0;
  for (const auto& step : plan.steps()) {
    if (const auto* set = std::get_if<netfilter::NftSet>(&step.change)) sets.push_back(set->name);
    if (const auto* chain = std::get_if<netfilter::NftChain>(&step.change)) {
      chains.push_back(chain->name);
    }
    rules += std::holds_alternative<netfilter::NftRule>(step.change);
    features += step.role == Role::kFeature;
  }
  using F = net::Family;
  EXPECT_EQ(sets,
            (std::vector<std::string>{
                "owned", "netcfg", names.DnatAny(F::kV4), names.DnatIp(F::kV4),
                names.HairpinAny(F::kV4, 8), names.HairpinIp(F::kV4, 8),
                names.HairpinAny(F::kV4, 16), names.HairpinIp(F::kV4, 16), names.DnatAny(F::kV6),
                names.DnatIp(F::kV6), names.HairpinAny(F::kV6, 64), names.HairpinIp(F::kV6, 64)}));
  EXPECT_EQ(chains, (std::vector<std::string>{names.Hostports(), names.Prerouting(), names.Output(),
                                              names.Masquerade()}));
  EXPECT_EQ(rules, 2u + 10 + 1);  // two fib jumps, the hostports rules, the masquerade rule
  EXPECT_EQ(features, 3u + 2);    // the nat chains, the fib rules
  const auto set = [&](const std::string& name) {
    for (const auto& step : plan.steps()) {
      if (const auto* s = std::get_if<netfilter::NftSet>(&step.change); s && s->name == name) {
        return *s;
      }
    }
    return netfilter::NftSet{};
  };
  // ipv4_addr . inet_proto . inet_service as nft numbers it, a hash set.
  const auto hairpin = set(names.HairpinAny(F::kV4, 16));
  EXPECT_EQ(hairpin.key_type, 0x730du);
  EXPECT_EQ(hairpin.key_len, 12u);
  EXPECT_EQ(hairpin.flags, 0u);
  EXPECT_TRUE(hairpin.field_lens.empty());
  EXPECT_EQ(set(names.HairpinIp(F::kV6, 64)).key_len, 40u);
  // Byte orders and typeof records nft 1.0.6 writes for such a set (and reads back to print it).
  EXPECT_EQ(hairpin.userdata,
            (std::vector<uint8_t>{0, 4, 0, 0, 0, 0, 3, 8, 0, 4, 13, 0, 0, 0, 1, 0}));
  const auto map = set(names.DnatIp(F::kV4));
  EXPECT_EQ(map.flags, uint32_t{NFT_SET_MAP});
  EXPECT_EQ(map.data_type, 0x1cdu);  // ipv4_addr . inet_service
  EXPECT_EQ(map.data_len, 8u);
  EXPECT_EQ(set("owned").key_type, 0xa69u);

  const auto hostports = nft::HostportsRules(config, lengths);
  ASSERT_EQ(hostports.size(), 10u);  // IPv4: /8 and /16 pairs, dnat pair; IPv6: /64, dnat
  // Localhost: `ip saddr & 255.0.0.0 . meta l4proto . th dport @<hairpin_any_v4_8>`, whose
  // elements are 127.0.0.0 . <key> (Linux 5.10 refuses a lookup in the dnat map that writes
  // no data).
  EXPECT_EQ(netfilter::ExpressionsText(hostports[1].exprs),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 4b @ network header + 12 => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x000000ff ) ^ 0x00000000 ]\n"
            "  [ meta load l4proto => reg 9 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 10 ]\n"
            "  [ lookup reg 1 set " +
                names.HairpinAny(F::kV4, 8) +
                " ]\n"
                "  [ meta load mark => reg 1 ]\n"
                "  [ bitwise reg 1 = ( reg 1 & 0xffffdfff ) ^ 0x00002000 ]\n"
                "  [ meta set mark with reg 1 ]\n");
  EXPECT_EQ(netfilter::ExpressionsText(hostports[3].exprs),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 4b @ network header + 12 => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x0000ffff ) ^ 0x00000000 ]\n"
            "  [ meta load l4proto => reg 9 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 10 ]\n"
            "  [ lookup reg 1 set " +
                names.HairpinAny(F::kV4, 16) +
                " ]\n"
                "  [ meta load mark => reg 1 ]\n"
                "  [ bitwise reg 1 = ( reg 1 & 0xffffdfff ) ^ 0x00002000 ]\n"
                "  [ meta set mark with reg 1 ]\n");
  EXPECT_EQ(netfilter::ExpressionsText(hostports[4].exprs),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 4b @ network header + 16 => reg 1 ]\n"
            "  [ meta load l4proto => reg 9 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 10 ]\n"
            "  [ lookup reg 1 set " +
                names.DnatIp(F::kV4) +
                " dreg 1 ]\n"
                "  [ nat dnat ip addr_min reg 1 proto_min reg 9 ]\n");
  // IPv6: the port of the map's data starts in the second 16-byte register.
  EXPECT_EQ(netfilter::ExpressionsText(hostports[9].exprs),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x0000000a ]\n"
            "  [ meta load l4proto => reg 1 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 9 ]\n"
            "  [ lookup reg 1 set " +
                names.DnatAny(F::kV6) +
                " dreg 1 ]\n"
                "  [ nat dnat ip6 addr_min reg 1 proto_min reg 2 ]\n");
}

// Linux before 6.5 refuses a lookup in a map that writes no data (NFTA_LOOKUP_DREG missing:
// EINVAL, seen on 5.10): every lookup of every config's rules in one of our maps takes the data,
// and every "is it mapped" check looks up a plain set.
TEST(NftablesRules, NoRuleLooksUpAMapWithoutItsData) {
  for (const char* extra :
       {"", R"(,"snat":false)", R"(,"masqAll":true)", R"(,"masqAll":true,"markMasqBit":5)",
        R"(,"conditionsV4":["tcp dport { 80, 443 }"],"conditionsV6":["ip6 saddr fd00::/8"])"}) {
    const Config config = MustParse(extra);
    nft::Plan plan;
    nft::AppendSetup(config, nft::HairpinLengthsOf(config), plan);
    std::set<std::string> maps;
    size_t lookups = 0;
    for (const auto& step : plan.steps()) {
      if (const auto* set = std::get_if<netfilter::NftSet>(&step.change);
          set && (set->flags & NFT_SET_MAP)) {
        maps.insert(set->name);
      }
      const auto* rule = std::get_if<netfilter::NftRule>(&step.change);
      if (rule == nullptr) continue;
      for (const auto& e : rule->exprs) {
        const auto* lookup = std::get_if<netfilter::expr::Lookup>(&e);
        if (lookup == nullptr) continue;
        ++lookups;
        if (maps.contains(lookup->set)) {
          EXPECT_TRUE(lookup->dreg.has_value()) << extra << ": " << lookup->set;
        }
      }
    }
    EXPECT_EQ(maps.size(), 4u) << extra;
    EXPECT_GE(lookups, 4u) << extra;
  }
}

// masqAll: traffic from every source to a mapped port is marked, through the hairpin sets of
// prefix length 0 (`ip saddr & 0.0.0.0 . ...`, elements 0.0.0.0 . <key>); no localhost pair.
TEST(NftablesRules, MasqAllMarksEverySourceThroughLengthZero) {
  const Config config = MustParse(R"(,"masqAll":true)");
  const auto rules = nft::HostportsRules(config, nft::HairpinLengthsOf(config));
  ASSERT_EQ(rules.size(), 8u);  // per family: the /0 pair, the dnat pair
  const auto names = nft::NamesFor("rnet");
  EXPECT_EQ(netfilter::ExpressionsText(rules[0].exprs),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 4b @ network header + 12 => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x00000000 ) ^ 0x00000000 ]\n"
            "  [ payload load 4b @ network header + 16 => reg 9 ]\n"
            "  [ meta load l4proto => reg 10 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 11 ]\n"
            "  [ lookup reg 1 set " +
                names.HairpinIp(net::Family::kV4, 0) +
                " ]\n"
                "  [ meta load mark => reg 1 ]\n"
                "  [ bitwise reg 1 = ( reg 1 & 0xffffdfff ) ^ 0x00002000 ]\n"
                "  [ meta set mark with reg 1 ]\n");
  EXPECT_NE(netfilter::ExpressionsText(rules[5].exprs)
                .find("[ lookup reg 1 set " + names.HairpinAny(net::Family::kV6, 0) + " ]"),
            std::string::npos);
  // Without snat nothing is marked: only the dnat pairs.
  const Config plain = MustParse(R"(,"snat":false)");
  EXPECT_EQ(nft::HostportsRules(plain, {{8, 16}, {64}}).size(), 4u);
}

// The fixed sources follow the network's config at its setup: a network written before they
// were hairpin elements (config hash v2) gets them for every mapping already there; a change
// of masqAll or snat deletes the ones the config no longer wants. Container subnets stay.
TEST(NftablesRules, FixedSourcesFollowTheConfig) {
  const auto names = nft::NamesFor("rnet");
  using F = net::Family;
  using Key = std::vector<uint8_t>;
  const Key tcp_80 = {6, 0, 0, 0, 0, 80, 0, 0};
  const Key ip_tcp_81 = {192, 0, 2, 1, 6, 0, 0, 0, 0, 81, 0, 0};
  const Key v6_udp_53 = {17, 0, 0, 0, 0, 53, 0, 0};
  const auto with = [](Key head, const Key& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const std::vector<nft::ListedElement> dnat = {
      {names.DnatAny(F::kV4),
       F::kV4,
       {.key = tcp_80, .data = {10, 1, 0, 5, 0, 80, 0, 0}, .comment = "a"}},
      {names.DnatIp(F::kV4),
       F::kV4,
       {.key = ip_tcp_81, .data = {10, 1, 0, 6, 0, 81, 0, 0}, .comment = "b"}},
      {names.DnatAny(F::kV6), F::kV6, {.key = v6_udp_53, .data = Key(20, 1), .comment = "c"}},
  };
  // What a v2 network holds: container subnets only; "a" already has its localhost element.
  const std::vector<nft::ListedElement> hairpin = {
      {names.HairpinAny(F::kV4, 16), F::kV4, {.key = with({10, 1, 0, 0}, tcp_80), .comment = "a"}},
      {names.HairpinAny(F::kV4, 8), F::kV4, {.key = with({127, 0, 0, 0}, tcp_80), .comment = "a"}},
      {names.HairpinAny(F::kV4, 8), F::kV4, {.key = with({10, 0, 0, 0}, tcp_80), .comment = "x"}},
  };
  nft::HairpinLengths lengths;
  auto changes = nft::FollowFixedSources(MustParse(""), dnat, hairpin, lengths);
  EXPECT_EQ(lengths, (nft::HairpinLengths{{8}, {}}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].verb, ElementVerb::kAdd);
  EXPECT_EQ(changes[0].set, names.HairpinIp(F::kV4, 8));
  ASSERT_EQ(changes[0].elements.size(), 1u);
  EXPECT_EQ(changes[0].elements[0].key, with({127, 0, 0, 0}, ip_tcp_81));
  EXPECT_EQ(changes[0].elements[0].comment, "b");

  // masqAll now: every mapping gets its /0 element, the localhost elements go; 10.0.0.0/8 is a
  // container subnet and stays.
  lengths = {};
  changes = nft::FollowFixedSources(MustParse(R"(,"masqAll":true)"), dnat, hairpin, lengths);
  EXPECT_EQ(lengths, (nft::HairpinLengths{{0}, {0}}));
  std::vector<std::tuple<ElementVerb, std::string, Key, std::string>> got;
  for (const auto& c : changes) {
    for (const auto& e : c.elements) got.emplace_back(c.verb, c.set, e.key, e.comment);
  }
  const std::vector<std::tuple<ElementVerb, std::string, Key, std::string>> expected = {
      {ElementVerb::kDelete, names.HairpinAny(F::kV4, 8), with({127, 0, 0, 0}, tcp_80), ""},
      {ElementVerb::kAdd, names.HairpinAny(F::kV4, 0), with({0, 0, 0, 0}, tcp_80), "a"},
      {ElementVerb::kAdd, names.HairpinIp(F::kV4, 0), with({0, 0, 0, 0}, ip_tcp_81), "b"},
      {ElementVerb::kAdd, names.HairpinAny(F::kV6, 0), with(Key(16, 0), v6_udp_53), "c"},
  };
  EXPECT_EQ(got, expected);

  // snat off: no fixed source is wanted; the /0 elements of an earlier masqAll go too.
  const std::vector<nft::ListedElement> masq_all = {
      {names.HairpinAny(F::kV6, 0), F::kV6, {.key = with(Key(16, 0), v6_udp_53), .comment = "c"}},
      {names.HairpinAny(F::kV4, 8), F::kV4, {.key = with({127, 0, 0, 0}, tcp_80), .comment = "a"}},
  };
  lengths = {};
  changes = nft::FollowFixedSources(MustParse(R"(,"snat":false)"), dnat, masq_all, lengths);
  EXPECT_EQ(lengths, nft::HairpinLengths{});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].verb, ElementVerb::kDelete);
  EXPECT_EQ(changes[1].verb, ElementVerb::kDelete);
  EXPECT_EQ(changes[0].set, names.HairpinAny(F::kV6, 0));
  EXPECT_EQ(changes[1].set, names.HairpinAny(F::kV4, 8));
}

// Conditions go before each hostports rule of their family, with the dependencies nft puts
// before them, and their sets become anonymous sets of that rule.
TEST(NftablesRules, ConditionsPrefixTheirFamilysRules) {
  const Config config =
      MustParse(R"(,"conditionsV4":["tcp dport { 80, 443 } ip saddr 10.0.0.0/8"])");
  const auto rules = nft::HostportsRules(config, nft::HairpinLengthsOf(config));
  ASSERT_EQ(rules.size(), 10u);
  for (size_t i = 0; i < rules.size(); ++i) {
    const bool v4 = i < 6;
    EXPECT_EQ(rules[i].sets.size(), v4 ? 1u : 0u) << i;
  }
  EXPECT_EQ(netfilter::ExpressionsText(rules[5].exprs),
            "  [ meta load l4proto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000006 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 1 ]\n"
            "  [ lookup reg 1 set __set%d ]\n"
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 1b @ network header + 12 => reg 1 ]\n"
            "  [ cmp eq reg 1 0x0000000a ]\n"
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ meta load l4proto => reg 1 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 9 ]\n"
            "  [ lookup reg 1 set " +
                nft::NamesFor("rnet").DnatAny(net::Family::kV4) +
                " dreg 1 ]\n"
                "  [ nat dnat ip addr_min reg 1 proto_min reg 9 ]\n");
  // In the plan, each set is created (with its elements) right before its rule, under a batch
  // ID the rule's lookup names.
  nft::Plan plan;
  nft::AppendSetup(config, nft::HairpinLengthsOf(config), plan);
  uint32_t last_set = 0;
  size_t anonymous = 0;
  for (const auto& step : plan.steps()) {
    if (const auto* set = std::get_if<netfilter::NftSet>(&step.change);
        set && set->name == "__set%d") {
      last_set = set->id;
      ++anonymous;
      EXPECT_EQ(set->flags, uint32_t{NFT_SET_ANONYMOUS | NFT_SET_CONSTANT});
      EXPECT_EQ(set->size, 2u);
    }
    if (const auto* rule = std::get_if<netfilter::NftRule>(&step.change)) {
      for (const auto& e : rule->exprs) {
        if (const auto* lookup = std::get_if<netfilter::expr::Lookup>(&e);
            lookup && lookup->set == "__set%d") {
          EXPECT_EQ(lookup->set_id, last_set);
        }
      }
    }
  }
  EXPECT_EQ(anonymous, 6u);
  // The config hash tells the conditions apart.
  EXPECT_NE(nft::ConfigHash(config), nft::ConfigHash(MustParse("")));
  EXPECT_NE(nft::ConfigHash(MustParse(R"(,"snat":false)")), nft::ConfigHash(MustParse("")));
}

TEST(NftablesRules, NetworkCommentFitsTheCommentLimit) {
  EXPECT_EQ(nft::NetworkComment("rnet"), "network rnet");
  const std::string longest(nft::kMaxCommentBytes - 8, 'n');
  EXPECT_EQ(nft::NetworkComment(longest), "network " + longest);
  const std::string over(200, 'n');
  const std::string cut = nft::NetworkComment(over);
  EXPECT_EQ(cut.size(), nft::kMaxCommentBytes);
  EXPECT_NE(cut.find("... sha512:"), std::string::npos);
  // A multi-byte character is not cut in half.
  std::string utf8 = "network-";
  while (utf8.size() < 200) utf8 += "\xc3\xa9";
  const std::string cut8 = nft::NetworkComment(utf8);
  EXPECT_LE(cut8.size(), nft::kMaxCommentBytes);
  const size_t dots = cut8.find("...");
  ASSERT_NE(dots, std::string::npos);
  EXPECT_NE(static_cast<unsigned char>(cut8[dots - 1]), 0xc3);
  EXPECT_EQ(nft::ElementComment(std::string(300, 'x')).size(), nft::kMaxCommentBytes);
}

// A legacy hairpin set (an rbtree of container subnets, outermost of nested ones) read back as
// prefixes, and turned into per-mapping hairpin elements of the containers it covers.
TEST(NftablesRules, LegacyHairpinMigration) {
  using netfilter::SetElement;
  const std::vector<SetElement> rbtree = {
      {.key = {0, 0, 0, 0}, .flags = NFT_SET_ELEM_INTERVAL_END},   {.key = {10, 88, 0, 0}},
      {.key = {10, 89, 0, 0}, .flags = NFT_SET_ELEM_INTERVAL_END}, {.key = {192, 0, 2, 0}},
      {.key = {192, 0, 3, 0}, .flags = NFT_SET_ELEM_INTERVAL_END},
  };
  const auto prefixes = nft::LegacyHairpinPrefixes(rbtree, net::Family::kV4);
  ASSERT_EQ(prefixes.size(), 2u);
  EXPECT_EQ(prefixes[0].ToString(), "10.88.0.0/16");
  EXPECT_EQ(prefixes[1].ToString(), "192.0.2.0/24");
  // A range to the family's end has no end element.
  const auto last = nft::LegacyHairpinPrefixes({{.key = {128, 0, 0, 0}}}, net::Family::kV4);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].ToString(), "128.0.0.0/1");

  const auto names = nft::NamesFor("rnet");
  const std::vector<nft::ListedElement> dnat = {
      {names.DnatAny(net::Family::kV4),
       net::Family::kV4,
       {.key = {6, 0, 0, 0, 0x1f, 0x90, 0, 0},
        .data = {10, 88, 0, 9, 0, 80, 0, 0},
        .comment = "old"}},
      {names.DnatAny(net::Family::kV4),
       net::Family::kV4,
       {.key = {6, 0, 0, 0, 0x1f, 0x91, 0, 0},
        .data = {172, 16, 0, 9, 0, 80, 0, 0},
        .comment = "out"}},
  };
  nft::HairpinLengths lengths;
  const auto changes = nft::MigrateLegacyHairpin("rnet", dnat, prefixes, {}, lengths);
  EXPECT_EQ(lengths, (nft::HairpinLengths{{16}, {}}));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].set, names.HairpinAny(net::Family::kV4, 16));
  ASSERT_EQ(changes[0].elements.size(), 1u);  // 172.16.0.9 is in no legacy subnet
  EXPECT_EQ(changes[0].elements[0].key,
            (std::vector<uint8_t>{10, 88, 0, 0, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  EXPECT_EQ(changes[0].elements[0].comment, "old");

  // Hairpin sets of a network read back by name.
  const auto shape = nft::HairpinSetShapeOf(names.prefix, names.HairpinIp(net::Family::kV6, 64));
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->family, net::Family::kV6);
  EXPECT_TRUE(shape->with_host_ip);
  EXPECT_EQ(shape->length, 64);
  EXPECT_FALSE(nft::HairpinSetShapeOf(names.prefix, names.LegacyHairpin(net::Family::kV4)));
  EXPECT_FALSE(nft::HairpinSetShapeOf("nother", names.HairpinAny(net::Family::kV4, 16)));
  EXPECT_FALSE(nft::HairpinSetShapeOf(names.prefix, names.prefix + "_hairpin_any_v4_33"));
}

// Deletions found by reading: records and markers are added before they are deleted, so the
// plan holds whether or not they are there; elements go by their keys (and range ends).
TEST(NftablesRules, ForgetAddsRecordsBeforeDeletingThem) {
  // The owner's records among the owned set's elements, its markers left out.
  const std::vector<netfilter::SetElement> owned = {
      {.key = netfilter::IfnameKey({"owner", "all4"})},
      {.key = netfilter::IfnameKey({"owner", "tag"})},
      {.key = netfilter::IfnameKey({"other", "tag2"})}};
  EXPECT_EQ(nft::RecordTagsOf("owner", owned), (std::vector<std::string>{"tag"}));
  nft::Plan plan;
  const std::vector<nft::ListedElement> listed = {
      {"m", net::Family::kV4, {.key = {1}, .data = {2}}},
      {"h", net::Family::kV4, {.key = {3}, .key_end = {4}}},
  };
  nft::AppendForget("owner", listed, {"tag"}, {net::Family::kV6}, plan);
  ASSERT_EQ(plan.steps().size(), 4u);
  EXPECT_EQ(Elements(plan.steps()[0]).verb, ElementVerb::kAdd);
  EXPECT_EQ(Elements(plan.steps()[1]).verb, ElementVerb::kDelete);
  EXPECT_EQ(
      Elements(plan.steps()[1]).elements,
      (std::vector<netfilter::ElementWrite>{{.key = netfilter::IfnameKey({"owner", "all6"})},
                                            {.key = netfilter::IfnameKey({"owner", "tag"})}}));
  EXPECT_EQ(Elements(plan.steps()[3]).elements[0].key_end, (std::vector<uint8_t>{4}));
}

TEST(NftablesRules, CheckNamesEveryObject) {
  const auto expected = nft::ExpectedObjects(MustParse(""));
  // netcfg; per family a marker; per mapping its element, record and hairpin elements (the
  // subnet's, and in IPv4 localhost's).
  ASSERT_EQ(expected.size(), 1u + 1 + 2 * 4 + 1 + 3);
  EXPECT_EQ(expected[0].what, "the chains of network rnet for this configuration");
  EXPECT_EQ(expected[2].what, "element 10.88.0.1 . tcp . 8080 in map na355caee90_dnat_ip_v4");
  EXPECT_EQ(expected[4].what,
            "hairpin element 10.88.0.0 . 10.88.0.1 . tcp . 8080 in set "
            "na355caee90_hairpin_ip_v4_16");
  EXPECT_EQ(expected[5].what,
            "hairpin element 127.0.0.0 . 10.88.0.1 . tcp . 8080 in set "
            "na355caee90_hairpin_ip_v4_8");
  EXPECT_EQ(expected[5].key,
            (std::vector<uint8_t>{127, 0, 0, 0, 10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  EXPECT_EQ(nft::ExpectedObjects(MustParse(R"(,"masqAll":true)")).back().what,
            "hairpin element :: . udp . 5353 in set na355caee90_hairpin_any_v6_0");
  EXPECT_EQ(nft::NetworkChainRuleCounts(MustParse(R"(,"snat":false)"), {}),
            (std::vector<nft::ChainRuleCount>{{"na355caee90_prerouting", 1},
                                              {"na355caee90_output", 1},
                                              {"na355caee90_hostports", 4},
                                              {"na355caee90_masquerade", 0}}));
}

TEST(NftablesRules, ReferenceLeftoversByCommentInItsChains) {
  const std::vector<netfilter::RuleRecord> rules = {
      {"hostports", 4, {}, netfilter::CommentUserData("ctr1")},
      {"hostports", 5, {}, netfilter::CommentUserData("ctr10")},
      {"masquerading", 9, {}, netfilter::CommentUserData("ctr1")},
      {"prerouting", 2, {}, netfilter::CommentUserData("ctr1")},
  };
  nft::Plan plan;
  EXPECT_EQ(nft::AppendReferenceLeftovers(2, rules, "ctr1", plan), 2u);
  EXPECT_EQ(std::get<nft::DeleteRule>(plan.steps()[0].change),
            (nft::DeleteRule{2, "cni_hostport", "hostports", 4}));
  EXPECT_EQ(std::get<nft::DeleteRule>(plan.steps()[1].change),
            (nft::DeleteRule{2, "cni_hostport", "masquerading", 9}));
}

// A refusal reads as the missing kernel feature when an object that needs one is refused the
// way a kernel without it refuses; otherwise as the first refused change.
TEST(NftablesRules, RefusalsNameTheMissingFeature) {
  nft::Plan plan;
  nft::AppendSetup(MustParse(""), {}, plan);
  size_t nat_chain = 0;
  for (size_t i = 0; i < plan.steps().size(); ++i) {
    if (plan.steps()[i].subject == nft::kFeatureInetNat) {
      nat_chain = i;
      break;
    }
  }
  const Error old_kernel = nft::RefusalError(plan, {{nat_chain, ENOENT, ""}}, "add mappings");
  EXPECT_EQ(old_kernel.code, kErrKernel);
  EXPECT_NE(old_kernel.msg.find("the kernel lacks nat chains in inet tables (Linux 5.2 or later)"),
            std::string::npos)
      << old_kernel.msg;
  const Error other = nft::RefusalError(plan, {{0, EPERM, "no"}}, "add mappings");
  EXPECT_EQ(other.msg, "nftables: add mappings: table: Operation not permitted (no)");
}

}  // namespace
}  // namespace nodegate::portmap
