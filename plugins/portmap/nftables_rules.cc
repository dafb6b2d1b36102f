#include "plugins/portmap/nftables_rules.h"

#include <cstdio>

#include "lib/base/hash.h"

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

std::string Conditions(const Config& config, net::Family family) {
  const auto& tokens = config.conditions(family);
  if (BackendOfConditions(tokens) != Backend::kNftables) return "";
  std::string out;
  for (const auto& t : tokens) out += t + " ";
  return out;
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
  for (const auto& t : config.conditions_v4) text += "|4:" + t;
  for (const auto& t : config.conditions_v6) text += "|6:" + t;
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

int Script::Add(const std::string& line) {
  text_ += line;
  text_ += '\n';
  return ++lines_;
}

std::vector<std::string> HostportsRules(const Config& config) {
  const NetworkNames n = NamesFor(config.network_name);
  const std::string mark = Hex32(config.mark());
  const std::string set_mark = " meta mark set meta mark | " + mark;
  std::vector<std::string> rules;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const std::string cond = Conditions(config, f);
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
  // The caller deletes this network's records of other configs (it needs a listing).
  s.Add("add element " + Qualified(kNetcfgSet) + " { " + Quoted(n.prefix) + " . " +
        Hex32(ConfigHash(config)) + " }");
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

AddLines AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Script& s,
                   const HairpinPlan& hairpin) {
  const NetworkNames n = NamesFor(config.network_name);
  const std::string owner = Quoted(OwnerTag(config.network_name, config.container_id));
  const std::string comment = Quoted(ElementComment(config.container_id));
  AddLines lines;
  if (assert_netcfg) {
    // Present only when the chains were written for exactly this config: delete fails with
    // ENOENT otherwise, and the add puts it back.
    const std::string elem = "{ " + Quoted(n.prefix) + " . " + Hex32(ConfigHash(config)) + " }";
    lines.netcfg = s.Add("delete element " + Qualified(kNetcfgSet) + " " + elem);
    s.Add("add element " + Qualified(kNetcfgSet) + " " + elem);
  }
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const auto& container = config.container(f);
    if (!container) continue;
    lines.markers.push_back(s.Add(std::string(create_markers ? "create" : "add") + " element " +
                                  Qualified(kOwnedSet) + " { " + owner + " . " +
                                  Quoted(FamilyMarker(f)) + " }"));
    for (const auto& e : ContainerElements(config, f)) {
      s.Add("add element " + Qualified(kOwnedSet) + " { " + owner + " . " + Quoted(e.Tag()) + " }");
      lines.elements.push_back(s.Add("add element " + Qualified(e.map) + " { " + e.key +
                                     " comment " + comment + " : " + e.value + " }"));
    }
    if (config.snat && !config.masq_all) {
      const auto& plan = hairpin.of(f);
      if (plan) {
        for (const auto& covered : plan->remove) {
          s.Add("delete element " + Qualified(n.Hairpin(f)) + " { " + covered + " }");
        }
      }
      if (!plan || plan->add) {
        lines.hairpin.push_back(s.Add("add element " + Qualified(n.Hairpin(f)) + " { " +
                                      container->Masked().ToString() + " }"));
      }
    }
  }
  return lines;
}

int AppendDelete(const std::string& owner, const std::vector<Element>& elements,
                 std::optional<net::Family> marker, Script& s) {
  int marker_line = 0;
  if (marker) {
    marker_line = s.Add("delete element " + Qualified(kOwnedSet) + " { " + Quoted(owner) + " . " +
                        Quoted(FamilyMarker(*marker)) + " }");
  }
  for (const auto& e : elements) {
    s.Add("delete element " + Qualified(kOwnedSet) + " { " + Quoted(owner) + " . " +
          Quoted(e.Tag()) + " }");
    s.Add("delete element " + Qualified(e.map) + " { " + e.key + " }");
  }
  return marker_line;
}

Status CheckNftConditions(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t.find_first_of(";\n\r#") != std::string::npos) {
      return Error(kErrInvalidConfig, "nft condition token \"" + t +
                                          "\" contains a character that would end the rule");
    }
  }
  return OkStatus();
}

}  // namespace nodegate::portmap::nft
