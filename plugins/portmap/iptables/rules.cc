#include "plugins/portmap/iptables/rules.h"

#include <cstdio>
#include <cstring>
#include <map>

#include "lib/base/hash.h"

namespace nodegate::portmap::ipt {
namespace {

// xtables_save_string: bare when only [A-Za-z0-9_-], else quoted with \" \\ \' escaped.
std::string SaveString(const std::string& value) {
  bool bare = !value.empty();
  for (char c : value) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
      bare = false;
      break;
    }
  }
  if (bare) {
    return value;
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\' || c == '\'') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

std::string Hex(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", value);
  return buf;
}

std::string AddressWithPort(const net::IpAddress& address, int port) {
  if (address.is_v4()) {
    return address.ToString() + ":" + std::to_string(port);
  }
  return "[" + address.ToString() + "]:" + std::to_string(port);
}

struct MatchPrinter {
  std::string& out;
  void operator()(const CommentMatch& m) { out += " -m comment --comment " + SaveString(m.text); }
  void operator()(const PortMatch& m) {
    const std::string name(ProtocolName(m.protocol));
    out += " -m " + name + " --dport " + std::to_string(m.dport);
  }
  void operator()(const MultiportMatch& m) {
    out += " -m multiport --dports ";
    for (size_t i = 0; i < m.dports.size(); ++i) {
      out += (i ? "," : "") + std::to_string(m.dports[i]);
    }
  }
  void operator()(const AddrtypeLocalMatch&) { out += " -m addrtype --dst-type LOCAL"; }
  void operator()(const MarkMatch& m) {
    out += " -m mark --mark " + Hex(m.mark);
    if (m.mask != 0xffffffffu) out += "/" + Hex(m.mask);
  }
};

struct TargetPrinter {
  std::string& out;
  void operator()(const JumpTarget& t) { out += " -j " + t.chain; }
  void operator()(const SetMarkTarget& t) {
    out += " -j MARK --set-xmark " + Hex(t.value) + "/" + Hex(t.mask);
  }
  void operator()(const MasqueradeTarget&) { out += " -j MASQUERADE"; }
  void operator()(const DnatTarget& t) {
    out += " -j DNAT --to-destination " + AddressWithPort(t.address, t.port);
  }
};

void PrintPrefix(std::string& out, char flag, const std::optional<net::IpPrefix>& prefix,
                 bool invert) {
  if (!prefix || (prefix->length() == 0 && !invert)) {
    return;
  }
  out += std::string(out.empty() ? "" : " ") + (invert ? "! " : "") + "-" + flag + " " +
         prefix->Masked().ToString();
}

void PrintIface(std::string& out, char flag, const std::string& name, bool invert) {
  if (name.empty()) {
    return;
  }
  out += std::string(out.empty() ? "" : " ") + (invert ? "! " : "") + "-" + flag + " " + name;
}

}  // namespace

std::string Rule::ToString() const {
  std::string out;
  PrintPrefix(out, 's', header.src, header.src_invert);
  PrintPrefix(out, 'd', header.dst, header.dst_invert);
  PrintIface(out, 'i', header.in_iface, header.in_invert);
  PrintIface(out, 'o', header.out_iface, header.out_invert);
  if (header.protocol) {
    out +=
        std::string(out.empty() ? "" : " ") + "-p " + std::string(ProtocolName(*header.protocol));
  }
  std::string rest;
  for (const auto& m : matches) {
    std::visit(MatchPrinter{rest}, m);
  }
  std::visit(TargetPrinter{rest}, target);
  if (out.empty()) {
    return rest.substr(1);
  }
  return out + rest;
}

std::string ContainerChainName(const std::string& network_name, const std::string& container_id) {
  return HashedName("CNI-DN-", network_name, container_id, 28);
}

std::string LegacySnatChainName(const std::string& network_name, const std::string& container_id) {
  return HashedName("CNI-SN-", network_name, container_id, 28);
}

std::string EntryComment(const std::string& network_name, const std::string& container_id) {
  std::string comment = "dnat name: \"" + network_name + "\" id: \"" + container_id + "\"";
  // The kernel keeps 255 bytes plus the terminator.
  if (comment.size() > 255) {
    comment.resize(252);
    comment += "...";
  }
  return comment;
}

std::optional<CommentOwner> ParseEntryComment(const std::string& comment) {
  static constexpr std::string_view kHead = "dnat name: \"";
  static constexpr std::string_view kMiddle = "\" id: \"";
  if (comment.rfind(kHead, 0) != 0 || comment.size() < kHead.size() + kMiddle.size() + 1 ||
      comment.back() != '"') {
    return std::nullopt;
  }
  // Names and ids cannot contain quotes (the CNI validation regex), so the split is unique.
  const size_t middle = comment.find(kMiddle, kHead.size());
  if (middle == std::string::npos) {
    return std::nullopt;
  }
  CommentOwner owner;
  owner.network_name = comment.substr(kHead.size(), middle - kHead.size());
  const size_t id_start = middle + kMiddle.size();
  owner.container_id = comment.substr(id_start, comment.size() - 1 - id_start);
  return owner;
}

namespace {

// The chains and jumps every container shares: CNI-HOSTPORT-DNAT from PREROUTING and OUTPUT,
// and, when we own the marking, the set-mark and masquerade chains.
void PlanSharedRules(const Config& config, Plan& plan) {
  const bool own_mark_chain = config.snat && config.external_set_mark_chain.empty();
  // The reference's order of creation: iptables-nft 1.8.4 lists chains in the order the
  // kernel holds them (later versions sort them by name).
  if (own_mark_chain) {
    plan.shared_chains.push_back(kSetMarkChain);
    plan.shared_chains.push_back(kMasqChain);
    plan.shared_rules.push_back(
        {kSetMarkChain,
         Rule{{}, {CommentMatch{kSetMarkComment}}, SetMarkTarget{config.mark(), config.mark()}}});
    plan.shared_rules.push_back(
        {kMasqChain, Rule{{}, {MarkMatch{config.mark(), config.mark()}}, MasqueradeTarget{}}});
    plan.shared_rules.push_back(
        {"POSTROUTING", Rule{{}, {CommentMatch{kMasqComment}}, JumpTarget{kMasqChain}}, true});
  }
  plan.shared_chains.push_back(kDnatChain);
  for (const char* hook : {"PREROUTING", "OUTPUT"}) {
    plan.shared_rules.push_back({hook, Rule{{}, {AddrtypeLocalMatch{}}, JumpTarget{kDnatChain}}});
  }
}

// The container's own chain: per mapping, the hairpin (and IPv4 localhost) marking for SNAT,
// then the DNAT to the container.
void PlanContainerRules(const Config& config, net::Family family, Plan& plan) {
  const net::IpPrefix container = *config.container(family);
  const std::string setmark =
      config.external_set_mark_chain.empty() ? kSetMarkChain : config.external_set_mark_chain;
  plan.container_chain = ContainerChainName(config.network_name, config.container_id);
  const bool v4 = family == net::Family::kV4;
  const net::IpPrefix hairpin_src =
      config.masq_all ? net::IpPrefix(v4 ? net::IpAddress::V4(0) : *net::IpAddress::Parse("::"), 0)
                      : container.Masked();
  const int full = v4 ? 32 : 128;
  const auto mappings = config.MappingsFor(family);
  plan.container_rules.reserve(3 * mappings.size());  // a pod may map thousands of ports
  for (const auto& m : mappings) {
    Header base;
    base.protocol = m.protocol;
    if (m.has_specific_host_ip()) {
      base.dst = net::IpPrefix(*m.host_ip, full);
    }
    const PortMatch port{m.protocol, m.host_port};
    if (config.snat) {
      Header hairpin = base;
      hairpin.src = hairpin_src;
      plan.container_rules.push_back(Rule{std::move(hairpin), {port}, JumpTarget{setmark}});
      if (v4 && !config.masq_all) {
        Header localhost = base;
        localhost.src = net::IpPrefix(*net::IpAddress::Parse("127.0.0.1"), 32);
        plan.container_rules.push_back(Rule{std::move(localhost), {port}, JumpTarget{setmark}});
      }
    }
    plan.container_rules.push_back(
        Rule{std::move(base), {port}, DnatTarget{container.address(), m.container_port}});
  }
}

// Entry rules: per protocol (sorted by name), all mappings of that protocol in input order,
// 15 ports per multiport match. The reference does not filter by hostIP family here.
void PlanEntryRules(const Config& config, net::Family family, Plan& plan) {
  std::map<std::string, std::vector<int>> ports_by_protocol;
  std::map<std::string, Protocol> protocol_by_name;
  for (const auto& m : config.mappings) {
    const std::string name(ProtocolName(m.protocol));
    ports_by_protocol[name].push_back(m.host_port);
    protocol_by_name[name] = m.protocol;
  }
  const Header* conditions = config.conditions(family).iptables();
  const std::string comment = EntryComment(config.network_name, config.container_id);
  for (const auto& [name, ports] : ports_by_protocol) {
    for (size_t start = 0; start < ports.size(); start += kMultiportMax) {
      const size_t end = std::min(ports.size(), start + kMultiportMax);
      Header header = conditions ? *conditions : Header{};
      header.protocol = protocol_by_name[name];
      plan.entry_rules.push_back(
          Rule{header,
               {CommentMatch{comment},
                MultiportMatch{std::vector<int>(ports.begin() + static_cast<long>(start),
                                                ports.begin() + static_cast<long>(end))}},
               JumpTarget{plan.container_chain}});
    }
  }
}

}  // namespace

Plan BuildPlan(const Config& config, net::Family family) {
  Plan plan;
  plan.family = family;
  PlanSharedRules(config, plan);
  PlanContainerRules(config, family, plan);
  PlanEntryRules(config, family, plan);
  return plan;
}

Result<Header> ParseIptablesConditions(const std::vector<std::string>& tokens, net::Family family) {
  Header header;
  bool invert = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token == "!") {
      if (invert) {
        return Error(kErrInvalidConfig, "double \"!\" in conditions");
      }
      invert = true;
      continue;
    }
    if (i + 1 >= tokens.size()) {
      return Error(kErrInvalidConfig, "condition \"" + token + "\" needs a value");
    }
    const std::string& value = tokens[++i];
    if (token == "-s" || token == "--source" || token == "-d" || token == "--destination") {
      auto prefix = net::IpPrefix::Parse(value, /*allow_bare_address=*/true);
      if (!prefix || prefix->family() != family) {
        return Error(kErrInvalidConfig, "condition " + token + " needs an IPv" +
                                            (family == net::Family::kV4 ? "4" : "6") +
                                            " address or prefix, got \"" + value + "\"");
      }
      const bool source = token == "-s" || token == "--source";
      (source ? header.src : header.dst) = prefix->Masked();
      (source ? header.src_invert : header.dst_invert) = invert;
    } else if (token == "-i" || token == "--in-interface" || token == "-o" ||
               token == "--out-interface") {
      if (value.empty() || value.size() > 15) {
        return Error(kErrInvalidConfig, "condition " + token + " needs an interface name");
      }
      const bool in = token == "-i" || token == "--in-interface";
      (in ? header.in_iface : header.out_iface) = value;
      (in ? header.in_invert : header.out_invert) = invert;
    } else {
      return Error(kErrInvalidConfig, "unsupported iptables condition \"" + token +
                                          "\" (supported: [!] -s, -d, -i, -o with a value)");
    }
    invert = false;
  }
  if (invert) {
    return Error(kErrInvalidConfig, "trailing \"!\" in conditions");
  }
  return header;
}

}  // namespace nodegate::portmap::ipt
