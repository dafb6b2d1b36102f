// The nftables backend's scripts as text: elements, network chains and their config hash,
// ADD/CHECK/DEL plans, comment limits, hairpin sets, and the deletes built from listings.
#include "plugins/portmap/nftables/rules.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "lib/netfilter/query.h"
#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using testing::ConfText;
using testing::Parse;

// The fast path's element changes: the script's transaction, in register layout.
TEST(NftablesRules, AddElementPlanInRegisterLayout) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  const auto plan = nft::AddElementPlan(*config);
  ASSERT_TRUE(plan.has_value());
  const auto* changes = &plan->changes;
  using netfilter::ElementVerb;
  const auto names = nft::NamesFor("rnet");
  std::vector<std::pair<ElementVerb, std::string>> order;
  for (const auto& c : *changes) order.emplace_back(c.verb, c.set);
  const std::vector<std::pair<ElementVerb, std::string>> expected = {
      {ElementVerb::kDelete, "netcfg"},
      {ElementVerb::kAdd, "netcfg"},
      {ElementVerb::kCreate, "owned"},
      {ElementVerb::kAdd, "owned"},
      {ElementVerb::kAdd, names.DnatIp(net::Family::kV4)},
      {ElementVerb::kAdd, names.DnatAny(net::Family::kV4)},
      {ElementVerb::kAdd, names.Hairpin(net::Family::kV4)},
      {ElementVerb::kCreate, "owned"},
      {ElementVerb::kAdd, "owned"},
      {ElementVerb::kAdd, names.DnatAny(net::Family::kV6)},
      {ElementVerb::kAdd, names.Hairpin(net::Family::kV6)},
  };
  EXPECT_EQ(order, expected);
  // Roles as the script's commands have them: the classification of a refusal uses them.
  using nft::Role;
  EXPECT_EQ(plan->roles,
            (std::vector<Role>{Role::kNetcfg, Role::kOther, Role::kMarker, Role::kOther,
                               Role::kElement, Role::kElement, Role::kHairpin, Role::kMarker,
                               Role::kOther, Role::kElement, Role::kHairpin}));
  EXPECT_EQ(plan->subjects[4], "10.88.0.1 . tcp . 8080");
  EXPECT_EQ(plan->subjects[5], "udp . 5353");
  // netcfg: the prefix as an ifname, then the config hash in host byte order.
  const auto& netcfg = (*changes)[0].elements.at(0).key;
  ASSERT_EQ(netcfg.size(), 20u);
  uint32_t hash = 0;
  std::memcpy(&hash, netcfg.data() + 16, 4);
  EXPECT_EQ(hash, nft::ConfigHash(*config));
  // 10.88.0.1 . tcp . 8080 : 10.88.0.2 . 80, commented with the container ID.
  const auto& by_ip = (*changes)[4].elements.at(0);
  EXPECT_EQ(by_ip.key, (std::vector<uint8_t>{10, 88, 0, 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  EXPECT_EQ(by_ip.data, (std::vector<uint8_t>{10, 88, 0, 2, 0, 80, 0, 0}));
  EXPECT_EQ(by_ip.comment, "ctr1");
  EXPECT_EQ((*changes)[5].elements.at(0).key,
            (std::vector<uint8_t>{17, 0, 0, 0, 0x14, 0xe9, 0, 0}));  // udp . 5353
  // The hairpin range 10.88.0.0/16: its start, and the end flagged at the next address.
  const auto& hairpin = (*changes)[6].elements;
  ASSERT_EQ(hairpin.size(), 2u);
  EXPECT_EQ(hairpin[0].key, (std::vector<uint8_t>{10, 88, 0, 0}));
  EXPECT_FALSE(hairpin[0].interval_end);
  EXPECT_EQ(hairpin[1].key, (std::vector<uint8_t>{10, 89, 0, 0}));
  EXPECT_TRUE(hairpin[1].interval_end);
  // One ownership record per mapping, tagged as the script tags them.
  const auto elements = nft::ContainerElements(*config, net::Family::kV4);
  ASSERT_EQ((*changes)[3].elements.size(), elements.size());
  EXPECT_EQ((*changes)[3].elements[1].key,
            netfilter::IfnameKey({nft::OwnerTag("rnet", "ctr1"), elements[1].Tag()}));

  // A subnet that reaches the end of the address space has no end element: the script path.
  const std::string whole =
      R"("prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],
    "ips":[{"interface":0,"address":"10.88.0.2/0"}]})";
  auto everything = Parse(std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",)") +
                          R"("backend":"nftables","runtimeConfig":{"portMappings":)" +
                          testing::kMappings + "}," + whole + "}");
  ASSERT_TRUE(everything.ok()) << everything.error().msg;
  EXPECT_FALSE(nft::AddElementPlan(*everything).has_value());
  // Without hairpin (snat false), the same container has no range to write.
  auto no_snat = Parse(std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",)") +
                       R"("backend":"nftables","snat":false,"runtimeConfig":{"portMappings":)" +
                       testing::kMappings + "}," + whole + "}");
  ASSERT_TRUE(no_snat.ok()) << no_snat.error().msg;
  EXPECT_TRUE(nft::AddElementPlan(*no_snat).has_value());
}

TEST(NftablesRules, ElementsAndAddScript) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  const auto names = nft::NamesFor("rnet");
  const auto v4 = nft::ContainerElements(*config, net::Family::kV4);
  ASSERT_EQ(v4.size(), 2u);
  EXPECT_EQ(v4[0].map, names.DnatIp(net::Family::kV4));
  EXPECT_EQ(v4[0].key, "10.88.0.1 . tcp . 8080");
  EXPECT_EQ(v4[0].value, "10.88.0.2 . 80");
  EXPECT_EQ(v4[1].map, names.DnatAny(net::Family::kV4));
  EXPECT_EQ(v4[1].key, "udp . 5353");
  const auto v6 = nft::ContainerElements(*config, net::Family::kV6);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].value, "fd00:88::2 . 53");

  nft::Script script;
  nft::AppendAdd(*config, true, true, script);
  EXPECT_EQ(script.LinesOf(nft::Role::kNetcfg), std::vector<int>{1});
  EXPECT_EQ(script.LinesOf(nft::Role::kMarker).size(), 2u);
  EXPECT_EQ(script.LinesOf(nft::Role::kElement).size(), 3u);
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  EXPECT_NE(
      script.text().find("create element inet cni_hostport owned { \"" + owner + "\" . \"all4\" }"),
      std::string::npos);
  EXPECT_NE(script.text().find("add element inet cni_hostport " + names.DnatIp(net::Family::kV4) +
                               " { 10.88.0.1 . tcp . 8080 comment \"ctr1\" : 10.88.0.2 . 80 }"),
            std::string::npos);
  EXPECT_NE(script.text().find(names.Hairpin(net::Family::kV4) + " { 10.88.0.0/16 }"),
            std::string::npos);
  // Ownership includes the network name.
  EXPECT_NE(nft::OwnerTag("rnet", "ctr1"), nft::OwnerTag("other", "ctr1"));
  EXPECT_NE(nft::NamesFor("rnet").prefix, nft::NamesFor("other").prefix);
}

TEST(NftablesRules, NetworkChainsAndConfigHash) {
  auto config = Parse(
      ConfText(R"(,"backend":"nftables","conditionsV4":["ip","saddr","!=","203.0.113.0/24"])"));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto rules = nft::HostportsRules(*config);
  ASSERT_EQ(rules.size(), 10u);
  const auto n = nft::NamesFor("rnet");
  EXPECT_EQ(rules[0], "ip saddr != 203.0.113.0/24 ip saddr @" + n.Hairpin(net::Family::kV4) +
                          " ip daddr . meta l4proto . th dport @" + n.DnatIp(net::Family::kV4) +
                          " meta mark set meta mark | 0x00002000");
  EXPECT_EQ(rules[5],
            "ip saddr != 203.0.113.0/24 meta nfproto ipv4 dnat ip to meta l4proto . "
            "th dport map @" +
                n.DnatAny(net::Family::kV4));
  // IPv6 rules do not carry the IPv4 conditions and have no localhost rule.
  EXPECT_EQ(rules[6].rfind("ip6 saddr @", 0), 0u);

  nft::Script setup;
  nft::AppendSetup(*config, setup);
  EXPECT_NE(setup.text().find("fib daddr type local jump " + n.Hostports()), std::string::npos);
  EXPECT_NE(setup.text().find("meta mark & 0x00002000 == 0x00002000 masquerade"),
            std::string::npos);

  auto plain = Parse(ConfText(R"(,"backend":"nftables")"));
  auto masq_all = Parse(ConfText(R"(,"backend":"nftables","masqAll":true)"));
  EXPECT_NE(nft::ConfigHash(*config), nft::ConfigHash(*plain));
  EXPECT_NE(nft::ConfigHash(*plain), nft::ConfigHash(*masq_all));
  EXPECT_EQ(nft::HostportsRules(*masq_all).size(), 8u);
}

// A pod with many host ports is a handful of commands: one per set or map, whatever the
// number of mappings (nft evaluates each command on its own).
TEST(NftablesRules, ManyMappingsAreOneCommandPerMap) {
  std::string mappings = "[";
  for (int port = 20000; port < 20300; ++port) {
    mappings += (port > 20000 ? "," : "") + std::string("{\"hostPort\":") + std::to_string(port) +
                ",\"containerPort\":53,\"protocol\":\"udp\"}";
  }
  mappings += "]";
  const std::string conf = R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",)"
                           R"("backend":"nftables","runtimeConfig":{"portMappings":)" +
                           mappings +
                           R"(},"prevResult":{"cniVersion":"1.0.0",)"
                           R"("ips":[{"address":"10.88.0.2/16"}]}})";
  auto config = Parse(conf);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  nft::Script add;
  nft::AppendAdd(*config, true, true, add);
  // netcfg delete + add, marker, ownership records, the map's elements, hairpin.
  EXPECT_EQ(add.lines(), 6) << add.text();
  const auto element_lines = add.LinesOf(nft::Role::kElement);
  ASSERT_EQ(element_lines.size(), 1u);
  const nft::Command* elements = add.Line(element_lines[0]);
  EXPECT_EQ(elements->subject, "");  // several keys: a conflict is named by listing
  EXPECT_NE(elements->text.find("{ udp . 20000 comment \"ctr1\" : 10.88.0.2 . 53, udp . 20001 "),
            std::string::npos);
  EXPECT_NE(elements->text.find("udp . 20299 comment \"ctr1\" : 10.88.0.2 . 53 }"),
            std::string::npos);
  nft::Script del;
  nft::AppendDelete(nft::OwnerTag("rnet", "ctr1"),
                    nft::ContainerElements(*config, net::Family::kV4), net::Family::kV4, del);
  EXPECT_EQ(del.lines(), 3) << del.text();
}

TEST(NftablesRules, DeleteScriptPutsTheMarkerFirst) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")"), Purpose::kDel);
  nft::Script script;
  nft::AppendDelete(nft::OwnerTag("rnet", "ctr1"),
                    nft::ContainerElements(*config, net::Family::kV4), net::Family::kV4, script);
  EXPECT_EQ(script.LinesOf(nft::Role::kMarker), std::vector<int>{1});
  // Then one command per set: the ownership records, and each map's keys.
  EXPECT_EQ(script.lines(), 4);
  EXPECT_NE(script.text().find("delete element inet cni_hostport " +
                               nft::NamesFor("rnet").DnatAny(net::Family::kV4) + " { udp . 5353 }"),
            std::string::npos);
}

// Issue 13 row 8: chain comments fit nft's 128 bytes whatever the network name's length;
// names that fit keep the comment earlier versions wrote.
TEST(NftablesRules, NetworkCommentFitsTheCommentLimit) {
  EXPECT_EQ(nft::NetworkComment("rnet"), "network rnet");
  const std::string fits(120, 'a');  // "network " + 120 = 128 bytes
  EXPECT_EQ(nft::NetworkComment(fits), "network " + fits);
  for (const std::string& name :
       {std::string(121, 'a'), std::string(200, 'n'), std::string(5000, 'x'),
        std::string(118, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9"}) {
    const std::string c = nft::NetworkComment(name);
    EXPECT_LE(c.size(), 128u) << name.size();
    EXPECT_EQ(c.rfind("network ", 0), 0u);
    EXPECT_NE(c.find("... sha512:"), std::string::npos) << c;
  }
  // Cut at a character boundary, never inside a UTF-8 sequence.
  const std::string accented = std::string(92, 'a') + "\xc3\xa9" + std::string(40, 'b');
  const std::string c = nft::NetworkComment(accented);
  EXPECT_EQ(c.substr(0, c.find("... ")), "network " + std::string(92, 'a')) << c;
  // Names sharing their first bytes still differ.
  EXPECT_NE(nft::NetworkComment(std::string(200, 'n')),
            nft::NetworkComment(std::string(199, 'n') + "m"));
  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  config->network_name = std::string(200, 'n');
  nft::Script setup;
  nft::AppendSetup(*config, setup);
  EXPECT_EQ(setup.text().find(std::string(121, 'n')), std::string::npos);
}

// Issue 13 row 6: the hairpin set keeps the outermost container subnets only.
TEST(NftablesRules, HairpinPlanKeepsTheOutermostSubnets) {
  auto p = [](const char* text) { return *net::IpPrefix::Parse(text, true); };
  // Empty set, or a disjoint or adjacent element: add.
  EXPECT_TRUE(nft::PlanHairpin({}, p("10.1.0.5/24")).add);
  auto adjacent = nft::PlanHairpin({p("10.1.1.0/24"), p("fd00::/64")}, p("10.1.0.5/24"));
  EXPECT_TRUE(adjacent.add);
  EXPECT_TRUE(adjacent.remove.empty());
  // Covered by a larger element or already there: nothing.
  auto covered = nft::PlanHairpin({p("10.1.0.0/16")}, p("10.1.0.5/24"));
  EXPECT_FALSE(covered.add);
  EXPECT_TRUE(covered.remove.empty());
  EXPECT_FALSE(nft::PlanHairpin({p("10.1.0.0/24")}, p("10.1.0.6/24")).add);
  EXPECT_FALSE(nft::PlanHairpin({p("10.1.0.6")}, p("10.1.0.6/32")).add);
  // Around smaller elements: add, deleting what it covers.
  auto around =
      nft::PlanHairpin({p("10.1.0.0/24"), p("10.1.7.0/25"), p("10.2.0.0/24")}, p("10.1.0.6/16"));
  EXPECT_TRUE(around.add);
  EXPECT_EQ(around.remove, (std::vector<std::string>{"10.1.0.0/24", "10.1.7.0/25"}));
  auto v6 = nft::PlanHairpin({p("fd00:88::/64")}, p("fd00::2/16"));
  EXPECT_EQ(v6.remove, (std::vector<std::string>{"fd00:88::/64"}));

  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  nft::HairpinPlan plan;
  plan.v4 = around;
  plan.v6 = nft::HairpinChange{.add = false, .remove = {}};
  nft::Script script;
  nft::AppendAdd(*config, true, true, script, plan);
  EXPECT_EQ(script.LinesOf(nft::Role::kHairpin).size(), 1u);
  const auto names = nft::NamesFor("rnet");
  EXPECT_NE(script.text().find("delete element inet cni_hostport " +
                               names.Hairpin(net::Family::kV4) + " { 10.1.7.0/25 }"),
            std::string::npos);
  EXPECT_EQ(script.text().find(names.Hairpin(net::Family::kV6)), std::string::npos);
}

std::string Hex32(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", value);
  return buf;
}

// One tcp mapping, IPv4 container only.
Result<Config> OneMapping(Purpose purpose = Purpose::kAdd) {
  return Parse(std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",
    "backend":"nftables",
    "runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]},
    "prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.88.0.2/16"}]}})"),
               purpose);
}

TEST(NftablesRules, AddPlanForOneMapping) {
  auto config = OneMapping();
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  const std::string netcfg = "{ \"" + n.prefix + "\" . " + Hex32(nft::ConfigHash(*config)) + " }";
  const nft::Element element = nft::ContainerElements(*config, net::Family::kV4).at(0);
  const std::string t = "inet cni_hostport ";
  nft::Script script;
  nft::AppendAdd(*config, true, true, script);
  const std::vector<nft::Command> want = {
      {"delete element " + t + "netcfg " + netcfg, nft::Role::kNetcfg, ""},
      {"add element " + t + "netcfg " + netcfg, nft::Role::kOther, ""},
      {"create element " + t + "owned { \"" + owner + "\" . \"all4\" }", nft::Role::kMarker, ""},
      {"add element " + t + "owned { \"" + owner + "\" . \"" + element.Tag() + "\" }",
       nft::Role::kOther, ""},
      {"add element " + t + n.DnatAny(net::Family::kV4) +
           " { tcp . 8080 comment \"ctr1\" : 10.88.0.2 . 80 }",
       nft::Role::kElement, "tcp . 8080"},
      {"add element " + t + n.Hairpin(net::Family::kV4) + " { 10.88.0.0/16 }", nft::Role::kHairpin,
       ""},
  };
  EXPECT_EQ(script.commands(), want);
  EXPECT_EQ(script.Line(5)->subject, "tcp . 8080");
  EXPECT_EQ(script.Line(0), nullptr);
  EXPECT_EQ(script.Line(7), nullptr);
  EXPECT_EQ(script.text().substr(0, script.text().find('\n') + 1), want[0].text + "\n");
}

TEST(NftablesRules, CheckPlanNamesEachObject) {
  auto config = OneMapping(Purpose::kCheck);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  const std::string map = n.DnatAny(net::Family::kV4);
  const std::string tag = nft::ContainerElements(*config, net::Family::kV4).at(0).Tag();
  const nft::CheckScripts check = nft::BuildCheck(*config);
  std::vector<std::pair<std::string, std::string>> exists;
  for (const auto& c : check.exists.commands()) exists.emplace_back(c.text, c.subject);
  const std::string t = "delete element inet cni_hostport ";
  EXPECT_EQ(
      exists,
      (std::vector<std::pair<std::string, std::string>>{
          {t + "netcfg { \"" + n.prefix + "\" . " + Hex32(nft::ConfigHash(*config)) + " }",
           "the chains of network rnet for this configuration"},
          {t + "owned { \"" + owner + "\" . \"all4\" }", "the ownership marker of the container"},
          {t + map + " { tcp . 8080 }", "element tcp . 8080 in map " + map},
          {t + "owned { \"" + owner + "\" . \"" + tag + "\" }",
           "the ownership record of tcp . 8080"}}));
  EXPECT_EQ(check.values.text(),
            "add element inet cni_hostport " + map + " { tcp . 8080 : 10.88.0.2 . 80 }\n");
  std::vector<std::pair<std::string, size_t>> counts;
  for (const auto& c : nft::NetworkChainRuleCounts(*config)) counts.emplace_back(c.chain, c.rules);
  EXPECT_EQ(counts,
            (std::vector<std::pair<std::string, size_t>>{
                {n.Prerouting(), 1}, {n.Output(), 1}, {n.Hostports(), 10}, {n.Masquerade(), 1}}));
  EXPECT_EQ(nft::ListChainCommand(n.Output()), "list chain inet cni_hostport " + n.Output());
}

// The commands the backend builds from listings: re-ADD and GC (forget), DEL without the
// ADD's mappings, stale netcfg records, GC's hairpin sources, the reference's leftovers.
TEST(NftablesRules, ListingDrivenDeletes) {
  auto config = OneMapping();
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const nft::Element e = nft::ContainerElements(*config, net::Family::kV4).at(0);
  const std::string owned = "inet cni_hostport owned { \"o\" . ";
  const std::string in_map = "delete element inet cni_hostport " + e.map + " { tcp . 8080 }\n";

  nft::Script forget;
  nft::AppendForget("o", {e}, {net::Family::kV6}, forget);
  EXPECT_EQ(forget.text(), "add element " + owned + "\"all6\" }\ndelete element " + owned +
                               "\"all6\" }\nadd element " + owned + "\"" + e.Tag() +
                               "\" }\ndelete element " + owned + "\"" + e.Tag() + "\" }\n" +
                               in_map);

  nft::Script listed;
  nft::AppendDeleteListed("o", {{"o", "all4"}, {"other", "all4"}, {"o", "abc"}}, {e}, listed);
  EXPECT_EQ(listed.text(), "delete element " + owned + "\"all4\" }\ndelete element " + owned +
                               "\"abc\" }\n" + in_map);

  nft::Script netcfg;
  const uint32_t hash = nft::ConfigHash(*config);
  nft::AppendDropOtherConfigs(
      *config, {{n.prefix, Hex32(hash)}, {n.prefix, "0x1f"}, {"n0000000000", "0x2"}}, netcfg);
  EXPECT_EQ(netcfg.text(),
            "delete element inet cni_hostport netcfg { \"" + n.prefix + "\" . 0x0000001f }\n");

  nft::Script hairpin;
  nft::AppendDeleteHairpin("rnet", *net::IpPrefix::Parse("fd00:88::5/64"), hairpin);
  EXPECT_EQ(hairpin.text(), "delete element inet cni_hostport " + n.Hairpin(net::Family::kV6) +
                                " { fd00:88::/64 }\n");

  const nft::Script leftovers = nft::ReferenceLeftovers("ip6",
                                                        {{"hostports", "ctr1", 7},
                                                         {"hostports", "ctr2", 8},
                                                         {"other", "ctr1", 9},
                                                         {"masquerading", "ctr1", 12}},
                                                        "ctr1");
  EXPECT_EQ(leftovers.text(),
            "delete rule ip6 cni_hostport hostports handle 7\n"
            "delete rule ip6 cni_hostport masquerading handle 12\n");
  EXPECT_EQ(nft::ListReferenceTableCommand("ip"), "list table ip cni_hostport");
}

}  // namespace
}  // namespace nodegate::portmap
