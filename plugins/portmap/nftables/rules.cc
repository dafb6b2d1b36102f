#include "plugins/portmap/nftables/rules.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "lib/base/hash.h"
#include "lib/netfilter/query.h"

namespace nodegate::portmap::nft {
namespace {

std::string Qualified(const std::string& object) {
  return std::string(kFamily) + " " + kTable + " " + object;
}

std::string Hex32(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", value);
  return buf;
}

std::string Quoted(const std::string& text) { return "\"" + text + "\""; }

std::string Ip(net::Family f) { return f == net::Family::kV4 ? "ip" : "ip6"; }
std::string NfProto(net::Family f) { return f == net::Family::kV4 ? "ipv4" : "ipv6"; }
std::string AddrType(net::Family f) { return f == net::Family::kV4 ? "ipv4_addr" : "ipv6_addr"; }

// The family's nft conditions as a rule prefix ("ip saddr != 203.0.113.0/24 "), or "".
std::string ConditionsPrefix(const Config& config, net::Family family) {
  const NftConditions* conditions = config.conditions(family).nftables();
  return conditions ? conditions->text + " " : "";
}

// ""<owner>" . "<tag>"": an element of the owned set.
std::string OwnedPair(const std::string& owner, const std::string& tag) {
  return Quoted(owner) + " . " + Quoted(tag);
}

// "{ "<owner>" . "<tag>" }": an element of the owned set, alone.
std::string OwnedElement(const std::string& owner, const std::string& tag) {
  return "{ " + OwnedPair(owner, tag) + " }";
}

// Elements grouped by the set or map they go to, sets in order of first appearance: one
// command per set, so a pod with thousands of mappings is a handful of commands (nft evaluates
// each command on its own, and that, not the kernel, was most of such an ADD).
class ElementsBySet {
 public:
  void Add(const std::string& set, std::string element, std::string subject = {}) {
    auto it =
        std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.set == set; });
    if (it == groups_.end()) it = groups_.insert(groups_.end(), Group{set, {}, {}});
    it->elements.push_back(std::move(element));
    it->subjects.push_back(std::move(subject));
  }
  // "<verb> element <set> { e1, e2 }" per set; `role` and, for a single element, its subject.
  void AppendTo(Script& s, const std::string& verb, Role role = Role::kOther) const {
    for (const Group& g : groups_) {
      std::string text = verb + " element " + Qualified(g.set) + " { ";
      for (size_t i = 0; i < g.elements.size(); ++i) {
        if (i > 0) text += ", ";
        text += g.elements[i];
      }
      s.Add(text + " }", role, g.elements.size() == 1 ? g.subjects.front() : std::string());
    }
  }

 private:
  struct Group {
    std::string set;
    std::vector<std::string> elements, subjects;
  };
  std::vector<Group> groups_;
};

// "{ "<prefix>" . 0x<hash> }": an element of the netcfg set.
std::string NetcfgElement(const std::string& prefix, uint32_t hash) {
  return "{ " + Quoted(prefix) + " . " + Hex32(hash) + " }";
}

std::string DeleteFrom(const std::string& set, const std::string& element) {
  return "delete element " + Qualified(set) + " " + element;
}

}  // namespace

NetworkNames NamesFor(const std::string& network_name) {
  return NetworkNames{"n" + Sha512Hex(network_name).substr(0, 10)};
}

std::string Element::Tag() const { return Sha512Hex(map + "|" + key).substr(0, 15); }

std::string OwnerTag(const std::string& network_name, const std::string& container_id) {
  // A separator keeps ("ab","c") and ("a","bc") apart.
  return Sha512Hex(network_name + "/" + container_id).substr(0, 15);
}

std::string FamilyMarker(net::Family family) {
  return family == net::Family::kV4 ? "all4" : "all6";
}

uint32_t ConfigHash(const Config& config) {
  std::string text = "v1|" + config.network_name + "|" + (config.snat ? "snat" : "nosnat") + "|" +
                     (config.masq_all ? "masqall" : "") + "|" + std::to_string(config.mark());
  for (const auto& t : config.conditions_v4.tokens) text += "|4:" + t;
  for (const auto& t : config.conditions_v6.tokens) text += "|6:" + t;
  return static_cast<uint32_t>(std::stoul(Sha512Hex(text).substr(0, 8), nullptr, 16));
}

std::string ElementComment(const std::string& container_id) {
  return container_id.size() <= kMaxCommentBytes ? container_id
                                                 : container_id.substr(0, kMaxCommentBytes);
}

std::string NetworkComment(const std::string& network_name) {
  std::string comment = "network " + network_name;
  if (comment.size() <= kMaxCommentBytes) return comment;
  // "network <first bytes of the name>... sha512:<16 hex digits>", exactly 128 bytes. The
  // name's prefix is cut at a UTF-8 character boundary so the comment stays valid text.
  const std::string tail = "... sha512:" + Sha512Hex(network_name).substr(0, 16);
  size_t keep = kMaxCommentBytes - tail.size() - std::string("network ").size();
  while (keep > 0 && (static_cast<unsigned char>(network_name[keep]) & 0xC0) == 0x80) --keep;
  return "network " + network_name.substr(0, keep) + tail;
}

std::vector<Element> ContainerElements(const Config& config, net::Family family) {
  const NetworkNames names = NamesFor(config.network_name);
  const auto& container = config.container(family);
  std::vector<Element> out;
  for (const auto& m : config.MappingsFor(family)) {
    Element e;
    e.family = family;
    const std::string proto_port =
        std::string(ProtocolName(m.protocol)) + " . " + std::to_string(m.host_port);
    if (m.has_specific_host_ip()) {
      e.map = names.DnatIp(family);
      e.key = m.host_ip->ToString() + " . " + proto_port;
    } else {
      e.map = names.DnatAny(family);
      e.key = proto_port;
    }
    if (container) {
      e.value = container->address().ToString() + " . " + std::to_string(m.container_port);
    }
    out.push_back(std::move(e));
  }
  return out;
}

void Script::Add(std::string text, Role role, std::string subject) {
  commands_.push_back(Command{std::move(text), role, std::move(subject)});
}

std::string Script::text() const {
  std::string out;
  for (const auto& command : commands_) {
    out += command.text;
    out += '\n';
  }
  return out;
}

std::vector<int> Script::LinesOf(Role role) const {
  std::vector<int> out;
  for (size_t i = 0; i < commands_.size(); ++i) {
    if (commands_[i].role == role) out.push_back(static_cast<int>(i) + 1);
  }
  return out;
}

const Command* Script::Line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > commands_.size()) return nullptr;
  return &commands_[static_cast<size_t>(line) - 1];
}

std::string ListMapCommand(const std::string& map) { return "list map " + Qualified(map); }
std::string ListSetCommand(const std::string& set) { return "list set " + Qualified(set); }
std::string ListChainCommand(const std::string& chain) { return "list chain " + Qualified(chain); }

std::vector<std::string> HostportsRules(const Config& config) {
  const NetworkNames n = NamesFor(config.network_name);
  const std::string mark = Hex32(config.mark());
  const std::string set_mark = " meta mark set meta mark | " + mark;
  std::vector<std::string> rules;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const std::string cond = ConditionsPrefix(config, f);
    const std::string ip = Ip(f);
    const std::string by_ip = ip + " daddr . meta l4proto . th dport";
    const std::string by_port = "meta nfproto " + NfProto(f) + " meta l4proto . th dport";
    if (config.snat) {
      std::vector<std::string> sources;
      if (config.masq_all) {
        sources.push_back("");
      } else {
        sources.push_back(ip + " saddr @" + n.Hairpin(f) + " ");
        if (f == net::Family::kV4) sources.push_back("ip saddr 127.0.0.0/8 ");
      }
      for (const auto& src : sources) {
        rules.push_back(cond + src + by_ip + " @" + n.DnatIp(f) + set_mark);
        rules.push_back(cond + src + by_port + " @" + n.DnatAny(f) + set_mark);
      }
    }
    rules.push_back(cond + "dnat " + ip + " to " + by_ip + " map @" + n.DnatIp(f));
    rules.push_back(cond + "meta nfproto " + NfProto(f) + " dnat " + ip +
                    " to meta l4proto . th dport map @" + n.DnatAny(f));
  }
  return rules;
}

void AppendSetup(const Config& config, Script& s) {
  const NetworkNames n = NamesFor(config.network_name);
  s.Add("add table " + std::string(kFamily) + " " + kTable +
        " { comment \"nodegate portmap: host port mappings\"; }");
  s.Add("add set " + Qualified(kOwnedSet) + " { type ifname . ifname; }");
  s.Add("add set " + Qualified(kNetcfgSet) + " { type ifname . mark; }");
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const std::string addr = AddrType(f);
    s.Add("add map " + Qualified(n.DnatAny(f)) + " { type inet_proto . inet_service : " + addr +
          " . inet_service; }");
    s.Add("add map " + Qualified(n.DnatIp(f)) + " { type " + addr +
          " . inet_proto . inet_service : " + addr + " . inet_service; }");
    s.Add("add set " + Qualified(n.Hairpin(f)) + " { type " + addr + "; flags interval; }");
  }
  const std::string comment = " comment " + Quoted(NetworkComment(config.network_name)) + ";";
  s.Add("add chain " + Qualified(n.Hostports()) + " {" + comment + " }");
  s.Add("add chain " + Qualified(n.Prerouting()) +
        " { type nat hook prerouting priority dstnat; policy accept;" + comment + " }");
  s.Add("add chain " + Qualified(n.Output()) +
        " { type nat hook output priority -100; policy accept;" + comment + " }");
  s.Add("add chain " + Qualified(n.Masquerade()) +
        " { type nat hook postrouting priority srcnat; policy accept;" + comment + " }");
  for (const auto& chain : {n.Prerouting(), n.Output(), n.Hostports(), n.Masquerade()}) {
    s.Add("flush chain " + Qualified(chain));
  }
  // Only traffic to the node's own addresses is redirected (GHSA-jv3w-x3r3-g6rm).
  s.Add("add rule " + Qualified(n.Prerouting()) + " fib daddr type local jump " + n.Hostports());
  s.Add("add rule " + Qualified(n.Output()) + " fib daddr type local jump " + n.Hostports());
  for (const auto& rule : HostportsRules(config)) {
    s.Add("add rule " + Qualified(n.Hostports()) + " " + rule);
  }
  if (config.snat) {
    const std::string mark = Hex32(config.mark());
    s.Add("add rule " + Qualified(n.Masquerade()) + " meta mark & " + mark + " == " + mark +
          " masquerade");
  }
  // AppendDropOtherConfigs deletes this network's records of other configs (from a listing).
  s.Add("add element " + Qualified(kNetcfgSet) + " " + NetcfgElement(n.prefix, ConfigHash(config)));
}

void AppendDropOtherConfigs(const Config& config,
                            const std::vector<std::pair<std::string, std::string>>& records,
                            Script& s) {
  const std::string prefix = NamesFor(config.network_name).prefix;
  for (const auto& [network, hash_text] : records) {
    if (network != prefix) continue;
    const auto hash = static_cast<uint32_t>(std::stoul(hash_text, nullptr, 0));
    if (hash == ConfigHash(config)) continue;
    s.Add(DeleteFrom(kNetcfgSet, NetcfgElement(network, hash)));
  }
}

HairpinChange PlanHairpin(const std::vector<net::IpPrefix>& existing, const net::IpPrefix& subnet) {
  const net::IpPrefix want = subnet.Masked();
  HairpinChange change;
  for (const auto& e : existing) {
    if (e.address().family() != want.address().family()) continue;
    if (e.length() <= want.length() && e.Contains(want.address())) {
      // Covered (or already there): nothing to add, nothing to delete.
      return HairpinChange{.add = false, .remove = {}};
    }
    if (want.length() < e.length() && want.Contains(e.address())) {
      change.remove.push_back(e.Masked().ToString());
    }
  }
  return change;
}

namespace {

// The container's hairpin source of family `f`: covered elements deleted, then the subnet
// added unless an element covers it.
void AppendHairpin(const Config& config, net::Family f, const HairpinPlan& hairpin, Script& s) {
  const std::string set = NamesFor(config.network_name).Hairpin(f);
  const auto& plan = hairpin.of(f);
  if (plan) {
    for (const auto& covered : plan->remove) {
      s.Add(DeleteFrom(set, "{ " + covered + " }"));
    }
  }
  if (!plan || plan->add) {
    s.Add("add element " + Qualified(set) + " { " + config.container(f)->Masked().ToString() + " }",
          Role::kHairpin);
  }
}

}  // namespace

void AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Script& s,
               const HairpinPlan& hairpin) {
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  const std::string comment = Quoted(ElementComment(config.container_id));
  if (assert_netcfg) {
    // Present only when the chains were written for exactly this config: delete fails with
    // ENOENT otherwise, and the add puts it back.
    const std::string elem =
        NetcfgElement(NamesFor(config.network_name).prefix, ConfigHash(config));
    s.Add(DeleteFrom(kNetcfgSet, elem), Role::kNetcfg);
    s.Add("add element " + Qualified(kNetcfgSet) + " " + elem);
  }
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    s.Add(std::string(create_markers ? "create" : "add") + " element " + Qualified(kOwnedSet) +
              " " + OwnedElement(owner, FamilyMarker(f)),
          Role::kMarker);
    ElementsBySet records, mappings;
    for (const auto& e : ContainerElements(config, f)) {
      records.Add(kOwnedSet, OwnedPair(owner, e.Tag()));
      mappings.Add(e.map, e.key + " comment " + comment + " : " + e.value, e.key);
    }
    records.AppendTo(s, "add");
    mappings.AppendTo(s, "add", Role::kElement);
    if (config.snat && !config.masq_all) AppendHairpin(config, f, hairpin, s);
  }
}

std::vector<uint8_t> DnatKey(const PortMapping& mapping) {
  std::vector<uint8_t> key;
  if (mapping.has_specific_host_ip()) {
    const auto& address = mapping.host_ip->bytes();
    key.assign(address.begin(), address.begin() + mapping.host_ip->byte_length());
  }
  const uint8_t proto_port[] = {static_cast<uint8_t>(ProtocolNumber(mapping.protocol)),
                                0,
                                0,
                                0,
                                static_cast<uint8_t>(mapping.host_port >> 8),
                                static_cast<uint8_t>(mapping.host_port & 0xff),
                                0,
                                0};
  key.insert(key.end(), std::begin(proto_port), std::end(proto_port));
  return key;
}

std::vector<uint8_t> DnatValue(const net::IpAddress& container, int port) {
  std::vector<uint8_t> value(container.bytes().begin(),
                             container.bytes().begin() + container.byte_length());
  const uint8_t service[] = {static_cast<uint8_t>(port >> 8), static_cast<uint8_t>(port & 0xff), 0,
                             0};
  value.insert(value.end(), std::begin(service), std::end(service));
  return value;
}

namespace {

using netfilter::ElementChange;
using netfilter::ElementVerb;
using netfilter::ElementWrite;

ElementWrite OwnedWrite(const std::string& owner, const std::string& tag) {
  return ElementWrite{.key = netfilter::IfnameKey({owner, tag})};
}

// The network's netcfg record: ifname . mark, the mark in host byte order (nft's mark type).
ElementWrite NetcfgWrite(const Config& config) {
  ElementWrite write{.key = netfilter::IfnameKey({NamesFor(config.network_name).prefix})};
  const uint32_t hash = ConfigHash(config);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&hash);
  write.key.insert(write.key.end(), bytes, bytes + sizeof(hash));
  return write;
}

// The container's subnet as an interval: its first address, and the address after its last.
std::optional<std::vector<ElementWrite>> HairpinWrites(const net::IpPrefix& subnet) {
  const net::IpPrefix masked = subnet.Masked();
  const net::IpAddress after = masked.LastAddress().Next();
  if (after.IsZero()) return std::nullopt;  // nft writes such a range without an end element
  const auto bytes = [](const net::IpAddress& a) {
    return std::vector<uint8_t>(a.bytes().begin(), a.bytes().begin() + a.byte_length());
  };
  return std::vector<ElementWrite>{{.key = bytes(masked.Network())},
                                   {.key = bytes(after), .interval_end = true}};
}

// The elements of one family's mappings as changes: one per map, maps in order of first
// appearance (as ElementsBySet groups the script's), `write(i)` the element of mapping i. With
// `subjects`, the key of each map's first element, as the script's commands name it.
std::vector<ElementChange> ChangesPerMap(ElementVerb verb, const std::vector<Element>& elements,
                                         const std::function<ElementWrite(size_t)>& write,
                                         std::vector<std::string>* subjects = nullptr) {
  std::vector<ElementChange> maps;
  for (size_t i = 0; i < elements.size(); ++i) {
    auto map = std::find_if(maps.begin(), maps.end(),
                            [&](const ElementChange& c) { return c.set == elements[i].map; });
    if (map == maps.end()) {
      map = maps.insert(maps.end(), ElementChange{verb, elements[i].map, {}});
      if (subjects != nullptr) subjects->push_back(elements[i].key);
    }
    map->elements.push_back(write(i));
  }
  return maps;
}

// The owner's ownership records of `elements`, one change.
ElementChange RecordsOf(ElementVerb verb, const std::string& owner,
                        const std::vector<Element>& elements) {
  ElementChange records{verb, kOwnedSet, {}};
  for (const auto& e : elements) records.elements.push_back(OwnedWrite(owner, e.Tag()));
  return records;
}

}  // namespace

std::optional<ElementPlan> AddElementPlan(const Config& config) {
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  const std::string comment = ElementComment(config.container_id);
  ElementPlan plan;
  plan.Add({ElementVerb::kDelete, kNetcfgSet, {NetcfgWrite(config)}}, Role::kNetcfg);
  plan.Add({ElementVerb::kAdd, kNetcfgSet, {NetcfgWrite(config)}});
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const auto& container = config.container(f);
    if (!container) continue;
    plan.Add({ElementVerb::kCreate, kOwnedSet, {OwnedWrite(owner, FamilyMarker(f))}},
             Role::kMarker);
    const std::vector<PortMapping> mappings = config.MappingsFor(f);
    const std::vector<Element> elements = ContainerElements(config, f);
    if (!elements.empty()) plan.Add(RecordsOf(ElementVerb::kAdd, owner, elements));
    std::vector<std::string> first_keys;
    auto maps = ChangesPerMap(
        ElementVerb::kAdd, elements,
        [&](size_t i) {
          return ElementWrite{.key = DnatKey(mappings[i]),
                              .data = DnatValue(container->address(), mappings[i].container_port),
                              .comment = comment};
        },
        &first_keys);
    for (size_t m = 0; m < maps.size(); ++m) {
      const bool one = maps[m].elements.size() == 1;
      plan.Add(std::move(maps[m]), Role::kElement, one ? first_keys[m] : std::string());
    }
    if (config.snat && !config.masq_all) {
      auto hairpin = HairpinWrites(*container);
      if (!hairpin) return std::nullopt;
      plan.Add({ElementVerb::kAdd, NamesFor(config.network_name).Hairpin(f), std::move(*hairpin)},
               Role::kHairpin);
    }
  }
  return plan;
}

std::optional<ElementPlan> DeleteElementPlan(const Config& config,
                                             const std::vector<net::Family>& families) {
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  ElementPlan plan;
  for (const auto f : families) {
    const std::vector<PortMapping> mappings = config.MappingsFor(f);
    if (mappings.empty()) return std::nullopt;
    plan.Add({ElementVerb::kDelete, kOwnedSet, {OwnedWrite(owner, FamilyMarker(f))}},
             Role::kMarker);
    const std::vector<Element> elements = ContainerElements(config, f);
    plan.Add(RecordsOf(ElementVerb::kDelete, owner, elements));
    for (auto& map : ChangesPerMap(ElementVerb::kDelete, elements, [&](size_t i) {
           return ElementWrite{.key = DnatKey(mappings[i])};
         })) {
      plan.Add(std::move(map));
    }
  }
  return plan;
}

void AppendDelete(const std::string& owner, const std::vector<Element>& elements,
                  std::optional<net::Family> marker, Script& s) {
  if (marker) {
    s.Add(DeleteFrom(kOwnedSet, OwnedElement(owner, FamilyMarker(*marker))), Role::kMarker);
  }
  ElementsBySet records, mappings;
  for (const auto& e : elements) {
    records.Add(kOwnedSet, OwnedPair(owner, e.Tag()));
    mappings.Add(e.map, e.key);
  }
  records.AppendTo(s, "delete");
  mappings.AppendTo(s, "delete");
}

void AppendForget(const std::string& owner, const std::vector<Element>& elements,
                  const std::vector<net::Family>& markers, Script& s) {
  auto forget_record = [&](const std::string& tag) {
    const std::string elem = OwnedElement(owner, tag);
    s.Add("add element " + Qualified(kOwnedSet) + " " + elem);
    s.Add(DeleteFrom(kOwnedSet, elem));
  };
  for (const auto f : markers) forget_record(FamilyMarker(f));
  for (const auto& e : elements) {
    forget_record(e.Tag());
    s.Add(DeleteFrom(e.map, "{ " + e.key + " }"));
  }
}

void AppendDeleteListed(const std::string& owner,
                        const std::vector<std::pair<std::string, std::string>>& records,
                        const std::vector<Element>& elements, Script& s) {
  for (const auto& [who, tag] : records) {
    if (who == owner) s.Add(DeleteFrom(kOwnedSet, OwnedElement(who, tag)));
  }
  for (const auto& e : elements) {
    s.Add(DeleteFrom(e.map, "{ " + e.key + " }"));
  }
}

void AppendDeleteHairpin(const std::string& network_name, const net::IpPrefix& source, Script& s) {
  s.Add(DeleteFrom(NamesFor(network_name).Hairpin(source.family()),
                   "{ " + source.Masked().ToString() + " }"));
}

CheckScripts BuildCheck(const Config& config) {
  const std::string prefix = NamesFor(config.network_name).prefix;
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  CheckScripts out;
  Script& exists = out.exists;
  exists.Add(DeleteFrom(kNetcfgSet, NetcfgElement(prefix, ConfigHash(config))), Role::kOther,
             "the chains of network " + config.network_name + " for this configuration");
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    exists.Add(DeleteFrom(kOwnedSet, OwnedElement(owner, FamilyMarker(f))), Role::kMarker,
               "the ownership marker of the container");
    for (const auto& e : ContainerElements(config, f)) {
      exists.Add(DeleteFrom(e.map, "{ " + e.key + " }"), Role::kElement,
                 "element " + e.key + " in map " + e.map);
      exists.Add(DeleteFrom(kOwnedSet, OwnedElement(owner, e.Tag())), Role::kOther,
                 "the ownership record of " + e.key);
      out.values.Add("add element " + Qualified(e.map) + " { " + e.key + " : " + e.value + " }",
                     Role::kElement, e.key);
    }
  }
  return out;
}

std::vector<ChainRuleCount> NetworkChainRuleCounts(const Config& config) {
  const NetworkNames n = NamesFor(config.network_name);
  return {{n.Prerouting(), 1},
          {n.Output(), 1},
          {n.Hostports(), HostportsRules(config).size()},
          {n.Masquerade(), config.snat ? 1u : 0u}};
}

std::string ReferenceTable(const std::string& family) { return family + " " + kTable; }

std::string ListReferenceTableCommand(const std::string& family) {
  return "list table " + ReferenceTable(family);
}

Script ReferenceLeftovers(const std::string& family, const std::vector<ListedRule>& rules,
                          const std::string& container_id) {
  Script s;
  for (const auto& rule : rules) {
    bool reference_chain = false;
    for (const char* c : kReferenceChains) reference_chain |= rule.chain == c;
    if (!reference_chain || rule.comment != container_id) continue;
    s.Add("delete rule " + ReferenceTable(family) + " " + rule.chain + " handle " +
          std::to_string(rule.handle));
  }
  return s;
}

Result<NftConditions> ParseNftConditions(const std::vector<std::string>& tokens) {
  NftConditions out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t.find_first_of(";\n\r#") != std::string::npos) {
      return Error(kErrInvalidConfig, "nft condition token \"" + t +
                                          "\" contains a character that would end the rule");
    }
    out.text += (i == 0 ? "" : " ") + t;
  }
  return out;
}

}  // namespace nodegate::portmap::nft
