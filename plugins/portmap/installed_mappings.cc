// Reads back every host-port mapping of the node, layout by layout: the reference's iptables
// layout (entry rules of CNI-HOSTPORT-DNAT name the owner and the CNI-DN-* chain, whose DNAT
// rules hold host IP, protocol, port and target) in nf_tables and in the legacy x_tables, our
// `inet cni_hostport` maps, and the reference's `ip`/`ip6 cni_hostport` rules. Nothing is
// created: a missing table, or an unloaded legacy one, is skipped.
#include "plugins/portmap/installed_mappings.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "lib/netfilter/nft.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/iptables/legacy/encode.h"
#include "plugins/portmap/iptables/legacy/ops.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/nftables/rules.h"

namespace nodegate::portmap {
namespace {

using Json = nlohmann::json;

constexpr int kStaleRetries = 20;

std::optional<Protocol> ProtocolOfName(const std::string& name) {
  if (name == "tcp" || name == "6") return Protocol::kTcp;
  if (name == "udp" || name == "17") return Protocol::kUdp;
  if (name == "sctp" || name == "132") return Protocol::kSctp;
  return std::nullopt;
}

std::string Scalar(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  return value.dump();
}

// One rule of an iptables-layout chain as read: its jump target (or target name) and what
// could be decoded of it.
struct ListedRule {
  std::string target;
  std::optional<ipt::Rule> rule;
};
using ChainReader = std::function<Result<std::vector<ListedRule>>(const std::string& chain)>;

std::string CommentOf(const ipt::Rule& rule) {
  for (const auto& m : rule.matches) {
    if (const auto* c = std::get_if<ipt::CommentMatch>(&m)) return c->text;
  }
  return "";
}

using Owners = std::map<std::string, ipt::CommentOwner>;  // CNI-DN-* chain -> its owner

// The reference's iptables layout through `read`, first half: the entry rules name owner and
// chain.
Result<Owners> EntryOwners(const ChainReader& read, net::Family family,
                           const std::set<PortKey>* only) {
  NG_ASSIGN_OR_RETURN(const auto entries, read(ipt::kDnatChain));
  Owners owners;
  for (const auto& entry : entries) {
    if (entry.target.rfind("CNI-DN-", 0) != 0 || !entry.rule) continue;
    const auto owner = ipt::ParseEntryComment(CommentOf(*entry.rule));
    if (!owner) continue;
    if (only && !EntryRuleMayMatch(*entry.rule, family, *only)) continue;
    owners.emplace(entry.target, *owner);
  }
  return owners;
}

// Second half: the DNAT rules of the chains of `owners` hold the mappings.
Status AppendChainMappings(const ChainReader& read, net::Family family, const char* layout,
                           const std::set<PortKey>* only, Owners::const_iterator first,
                           Owners::const_iterator last, std::vector<InstalledMapping>& out) {
  for (auto it = first; it != last; ++it) {
    const auto& [chain, owner] = *it;
    NG_ASSIGN_OR_RETURN(const auto rules, read(chain));
    for (const auto& listed : rules) {
      if (!listed.rule) continue;
      auto mapping = MappingOfDnatRule(*listed.rule, family);
      if (!mapping || (only && only->count(KeyOf(*mapping)) == 0)) continue;
      mapping->layout = layout;
      mapping->network = owner.network_name;
      mapping->container_id = owner.container_id;
      out.push_back(std::move(*mapping));
    }
  }
  return OkStatus();
}

// Reads the chains of `table` for the iptables-nft layout. One dump per chain: the entry
// chain, then the chain of each entry (a dump of the whole table costs more: the kernel
// resumes it by walking the table's rules from the start for every 32 KiB it returns). Rules
// that cannot be sought are passed over in the dump's own buffer, neither copied nor decoded:
// entries of other keys, and everything but a CNI-DN chain's DNAT rules (the only ones
// AppendChainMappings reads a mapping from).
ChainReader NftChainReader(ipt::NftNatTable& table, net::Family family,
                           const std::set<PortKey>* only) {
  return [&table, family, only](const std::string& chain) -> Result<std::vector<ListedRule>> {
    const bool entry_chain = chain == ipt::kDnatChain;
    NG_ASSIGN_OR_RETURN(const auto records, table.RulesWhere(chain, [&](netfilter::ByteView e) {
      if (!entry_chain) return RawRuleMayBeDnat(e);
      return only == nullptr || RawEntryMayMatch(e, family, *only);
    }));
    std::vector<ListedRule> rules;
    rules.reserve(records.size());
    for (const auto& r : records) {
      std::string target = r.verdict.chain.empty() ? r.verdict.target : r.verdict.chain;
      if (entry_chain && only == nullptr) {
        // Every port is wanted: of an entry rule only its owner (the comment) is read.
        ipt::Rule owner_only;
        if (auto comment = ipt::NftRuleComment(r.expressions, r.userdata)) {
          owner_only.matches.emplace_back(ipt::CommentMatch{std::move(*comment)});
        }
        rules.push_back({std::move(target), std::move(owner_only)});
        continue;
      }
      rules.push_back({std::move(target), ipt::DecodeNftRule(r.expressions, family, r.userdata)});
    }
    return rules;
  };
}

// Past this many container chains, a second thread with its own socket reads half of them:
// the dumps are mostly the kernel's time and the decoding ours, and both split.
constexpr size_t kChainsForSecondReader = 512;

// The mappings of the chains in [first, last), read through a table of its own (opened in the
// calling thread) whose reads are confirmed against `generation`.
Result<std::vector<InstalledMapping>> ReadChainsApart(net::Family family,
                                                      const std::set<PortKey>* only,
                                                      Owners::const_iterator first,
                                                      Owners::const_iterator last,
                                                      uint32_t generation) {
  NG_ASSIGN_OR_RETURN(auto table, ipt::NftNatTable::Open(family));
  if (table->generation() != generation) {
    return ipt::NftNatTable::StaleGeneration(table->name() + ": read table nat");
  }
  std::vector<InstalledMapping> found;
  NG_RETURN_IF_ERROR(AppendChainMappings(NftChainReader(*table, family, only), family,
                                         "iptables-nft", only, first, last, found));
  NG_RETURN_IF_ERROR(table->ConfirmReads());
  return found;
}

// One attempt at the iptables-nft layout of `family`; a stale-generation error when a writer
// committed meanwhile.
Status ReadIptablesNft(ipt::NftNatTable& table, net::Family family, const std::set<PortKey>* only,
                       std::vector<InstalledMapping>& out) {
  const ChainReader read = NftChainReader(table, family, only);
  NG_ASSIGN_OR_RETURN(const Owners owners, EntryOwners(read, family, only));
  auto middle = owners.end();
  std::future<Result<std::vector<InstalledMapping>>> second;
  if (owners.size() >= kChainsForSecondReader) {
    middle = std::next(owners.begin(), static_cast<std::ptrdiff_t>(owners.size() / 2));
    second = std::async(std::launch::async, ReadChainsApart, family, only, middle, owners.end(),
                        table.generation());
  }
  Status s = AppendChainMappings(read, family, "iptables-nft", only, owners.begin(), middle, out);
  if (s.ok()) s = table.ConfirmReads();
  if (second.valid()) {
    auto rest = second.get();  // always waited for: it reads `owners`
    if (s.ok() && !rest.ok()) s = rest.error();
    if (s.ok()) out.insert(out.end(), rest->begin(), rest->end());
  }
  return s;
}

// nf_tables `ip nat` / `ip6 nat` in iptables-nft's encoding; read again from the start when a
// writer commits meanwhile (the reads are confirmed against the generation).
Status AppendIptablesNft(net::Family family, const std::set<PortKey>* only,
                         std::vector<InstalledMapping>& out) {
  for (int attempt = 1;; ++attempt) {
    auto table = ipt::NftNatTable::Open(family);
    if (!table.ok()) {
      // No nf_tables in this kernel: no mappings there.
      if (!netfilter::ProbeNfTables().ok()) return OkStatus();
      if (ipt::NftNatTable::IsStaleGeneration(table.error()) && attempt < kStaleRetries) continue;
      return table.error().WithContext("list iptables-nft mappings");
    }
    std::vector<InstalledMapping> found;
    const Status s = ReadIptablesNft(**table, family, only, found);
    if (s.ok()) {
      out.insert(out.end(), found.begin(), found.end());
      return OkStatus();
    }
    if (!ipt::NftNatTable::IsStaleGeneration(s.error()) || attempt >= kStaleRetries) {
      return s.error().WithContext("list iptables-nft mappings");
    }
  }
}

// The legacy x_tables `nat` of `family`, read from one snapshot. Called only when that table
// is loaded (reading an unloaded one would load it).
Status AppendIptablesLegacy(net::Family family, const std::set<PortKey>* only,
                            std::vector<InstalledMapping>& out) {
  const ipt::LegacyOps& ops = ipt::LegacyOpsFor(family);
  std::unique_ptr<xtc_handle, void (*)(xtc_handle*)> handle(ops.init(ipt::kTable), ops.free);
  if (!handle) {
    return Error(kErrKernel, std::string("list iptables-legacy mappings: cannot read table nat: ") +
                                 ops.strerror(errno));
  }
  ChainReader read = [&](const std::string& chain) -> Result<std::vector<ListedRule>> {
    std::vector<ListedRule> rules;
    if (!ops.is_chain(chain.c_str(), handle.get())) return rules;
    for (const uint8_t* e = ops.first_rule(chain.c_str(), handle.get()); e != nullptr;
         e = ops.next_rule(e, handle.get())) {
      const char* target = ops.get_target(e, handle.get());
      const std::string name = target ? target : "";
      rules.push_back({name, ipt::DecodeEntryForListing(e, name, family)});
    }
    return rules;
  };
  NG_ASSIGN_OR_RETURN(const Owners owners, EntryOwners(read, family, only));
  return AppendChainMappings(read, family, "iptables-legacy", only, owners.begin(), owners.end(),
                             out);
}

// `list table <table>` as JSON; nullopt when the table does not exist.
Result<std::optional<std::string>> ListTable(netfilter::Nft& nft, const std::string& table) {
  netfilter::NftRun run = nft.Run("list table " + table, {.json_output = true});
  if (run.ok()) return std::optional<std::string>(run.output());
  if (run.HasErrno(ENOENT)) return std::optional<std::string>();
  return run.ToError("list table " + table);
}

// The name of each network of our table: nft 1.0.x has chain comments only in its text
// listings, so one small listing (rules, no elements) of each network's hostports chain.
std::map<std::string, std::string> NetworkNames(netfilter::Nft& nft, const std::string& json) {
  std::map<std::string, std::string> out;
  for (const auto& prefix : NetworkPrefixes(json)) {
    netfilter::NftRun run = nft.Run(nft::ListChainCommand(prefix + "_hostports"));
    if (run.ok()) out[prefix] = NetworkOfChainListing(run.output());
  }
  return out;
}

// Which of the nftables layouts' tables exist: [ours, the reference's ip, ip6]. One request
// each; libnftables (a millisecond to load, more to list) is opened only when one does.
Result<std::array<bool, 3>> NftablesTablesPresent() {
  NG_ASSIGN_OR_RETURN(const auto found,
                      netfilter::HasTables({{netfilter::kNfprotoInet, nft::kTable},
                                            {netfilter::kNfprotoIpv4, nft::kTable},
                                            {netfilter::kNfprotoIpv6, nft::kTable}}));
  return std::array<bool, 3>{found[0], found[1], found[2]};
}

// "network <name>" -> name; "" for a name cut to fit (NetworkComment) or another comment.
std::string NetworkOfComment(const std::string& comment) {
  const std::string lead = "network ";
  if (comment.rfind(lead, 0) != 0) return "";
  if (comment.size() >= nft::kMaxCommentBytes && comment.find("... sha512:") != std::string::npos) {
    return "";
  }
  return comment.substr(lead.size());
}

// The network named by the comment of a prefix's hostports chain ("" when unknown).
Result<std::string> NetworkOfPrefix(netfilter::TableReader& reader, const std::string& prefix) {
  NG_ASSIGN_OR_RETURN(const auto comment, reader.ChainComment(prefix + "_hostports"));
  return comment ? NetworkOfComment(*comment) : std::string();
}

// Our table over netlink, for the keys sought only: each network's dnat_any maps are asked
// for those keys (one request each, whatever the map holds); its dnat_ip maps (host-IP
// mappings, rare) are read whole, since a claim of every address overlaps all of theirs.
Status AppendOurTableByKeys(const std::set<PortKey>& only, std::vector<InstalledMapping>& out) {
  NG_ASSIGN_OR_RETURN(auto reader,
                      netfilter::TableReader::Open(netfilter::kNfprotoInet, nft::kTable));
  NG_ASSIGN_OR_RETURN(const auto sets, reader.SetNames());
  std::map<std::string, std::string> networks;  // prefix -> name, read when first needed
  for (const auto& set : sets) {
    const auto shape = DnatMapShapeOf(set);
    if (!shape) continue;
    std::vector<netfilter::SetElement> elements;
    if (shape->with_host_ip) {
      NG_ASSIGN_OR_RETURN(elements, reader.Elements(set));
    } else {
      for (const auto& key : only) {
        if (key.family != shape->family) continue;
        NG_ASSIGN_OR_RETURN(auto element, reader.Element(set, DnatAnyKey(key.protocol, key.port)));
        if (element) elements.push_back(std::move(*element));
      }
    }
    for (const auto& element : elements) {
      auto mapping = MappingOfMapElement(element, *shape);
      if (!mapping || only.count(KeyOf(*mapping)) == 0) continue;
      const std::string prefix = set.substr(0, set.find('_'));
      if (!networks.contains(prefix)) {
        NG_ASSIGN_OR_RETURN(networks[prefix], NetworkOfPrefix(reader, prefix));
      }
      mapping->network = networks[prefix];
      out.push_back(std::move(*mapping));
    }
  }
  return OkStatus();
}

// Our table and the reference nftables backend's, through libnftables (not available: none).
// With keys to look for, our table is read over netlink instead (AppendOurTableByKeys).
Status AppendNftables(const std::set<PortKey>* only, std::vector<InstalledMapping>& out) {
  auto present = NftablesTablesPresent();
  if (!present.ok() || *present == std::array<bool, 3>{}) return OkStatus();
  if (only != nullptr && (*present)[0]) {
    NG_RETURN_IF_ERROR(AppendOurTableByKeys(*only, out));
    (*present)[0] = false;
    if (*present == std::array<bool, 3>{}) return OkStatus();
  }
  auto nft = netfilter::Nft::Open();
  if (!nft.ok()) return OkStatus();
  std::vector<InstalledMapping> found;
  if ((*present)[0]) {
    NG_ASSIGN_OR_RETURN(const auto ours,
                        ListTable(*nft, std::string(nft::kFamily) + " " + nft::kTable));
    if (ours) found = ParseOurTableListing(*ours, NetworkNames(*nft, *ours));
  }
  for (const char* family : nft::kReferenceFamilies) {
    if (!(*present)[std::string(family) == "ip" ? 1 : 2]) continue;
    NG_ASSIGN_OR_RETURN(const auto listing, ListTable(*nft, nft::ReferenceTable(family)));
    if (!listing) continue;
    const auto f = std::string(family) == "ip" ? net::Family::kV4 : net::Family::kV6;
    for (auto& m : ParseReferenceTableListing(*listing, f)) found.push_back(std::move(m));
  }
  for (auto& m : found) {
    if (!only || only->count(KeyOf(m)) > 0) out.push_back(std::move(m));
  }
  return OkStatus();
}

// Whether `only` (nullptr: every key) seeks a key of `family`.
bool SeeksFamily(const std::set<PortKey>* only, net::Family family) {
  return only == nullptr || std::any_of(only->begin(), only->end(),
                                        [family](const PortKey& k) { return k.family == family; });
}

Result<std::vector<InstalledMapping>> List(const std::set<PortKey>* only) {
  std::vector<InstalledMapping> out;
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    // A family no key is sought in costs nothing: an IPv4-only container's refusal reads no
    // ip6 tables (one socket and a dump fewer).
    if (!SeeksFamily(only, family)) continue;
    NG_RETURN_IF_ERROR(AppendIptablesNft(family, only, out));
    if (LegacyTableLoaded(family, ipt::kTable)) {
      NG_RETURN_IF_ERROR(AppendIptablesLegacy(family, only, out));
    }
  }
  NG_RETURN_IF_ERROR(AppendNftables(only, out));
  return out;
}

// An element of one of our dnat maps: key "tcp . 8080" or "192.0.2.1 . tcp . 8080".
std::optional<InstalledMapping> MappingOfElement(const Json& pair, net::Family family) {
  if (!pair.is_array() || pair.size() != 2) return std::nullopt;
  const Json* key = &pair[0];
  InstalledMapping m;
  m.family = family;
  if (key->is_object() && key->contains("elem")) {
    m.container_id = (*key)["elem"].value("comment", "");
    key = &(*key)["elem"]["val"];
  }
  if (!key->is_object() || !key->contains("concat")) return std::nullopt;
  const Json& fields = (*key)["concat"];
  const Json& value = pair[1];
  if (fields.size() < 2 || fields.size() > 3 || !value.is_object() || !value.contains("concat") ||
      value["concat"].size() != 2) {
    return std::nullopt;
  }
  const size_t base = fields.size() - 2;
  if (base == 1) {
    m.host_ip = net::IpAddress::Parse(Scalar(fields[0]));
    if (!m.host_ip) return std::nullopt;
  }
  const auto protocol = ProtocolOfName(Scalar(fields[base]));
  const auto address = net::IpAddress::Parse(Scalar(value["concat"][0]));
  if (!protocol || !address || !fields[base + 1].is_number_integer()) return std::nullopt;
  m.protocol = *protocol;
  m.host_port = fields[base + 1].get<int>();
  m.target = TargetText(*address,
                        value["concat"][1].is_number_integer() ? value["concat"][1].get<int>() : 0);
  return m;
}

// The network of each prefix n<hash>, from its chains' comments (when the JSON has them).
std::map<std::string, std::string> NetworksByPrefix(const Json& objects) {
  std::map<std::string, std::string> out;
  for (const auto& object : objects) {
    if (!object.contains("chain")) continue;
    const Json& chain = object["chain"];
    const std::string name = chain.value("name", "");
    const std::string network = NetworkOfComment(chain.value("comment", ""));
    if (network.empty() || name.find('_') == std::string::npos) continue;
    out[name.substr(0, name.find('_'))] = network;
  }
  return out;
}

// The dnat statement and the matches of one rule of the reference's nftables tables.
std::optional<InstalledMapping> MappingOfReferenceRule(const Json& rule, net::Family family) {
  InstalledMapping m;
  m.family = family;
  m.layout = "nftables-reference";
  m.container_id = rule.value("comment", "");
  std::optional<Protocol> protocol;
  bool has_dnat = false;
  for (const auto& expr : rule.value("expr", Json::array())) {
    if (expr.contains("match")) {
      const Json& left = expr["match"].value("left", Json::object());
      const Json& right = expr["match"].value("right", Json());
      if (left.contains("payload")) {
        const std::string proto = left["payload"].value("protocol", "");
        const std::string field = left["payload"].value("field", "");
        if (field == "daddr") m.host_ip = net::IpAddress::Parse(Scalar(right));
        if (field == "dport" && right.is_number_integer()) {
          m.host_port = right.get<int>();
          if (proto != "th") protocol = ProtocolOfName(proto);
        }
      } else if (left.contains("meta") && left["meta"].value("key", "") == "l4proto") {
        protocol = ProtocolOfName(Scalar(right));
      }
    } else if (expr.contains("dnat")) {
      const Json& dnat = expr["dnat"];
      const auto address = net::IpAddress::Parse(Scalar(dnat.value("addr", Json(""))));
      if (!address) return std::nullopt;
      m.target = TargetText(*address, dnat.value("port", 0));
      has_dnat = true;
    }
  }
  if (!has_dnat || !protocol || m.host_port == 0) return std::nullopt;
  m.protocol = *protocol;
  return m;
}

}  // namespace

std::string TargetText(const net::IpAddress& address, int port) {
  const std::string host = address.is_v4() ? address.ToString() : "[" + address.ToString() + "]";
  return host + ":" + std::to_string(port);
}

std::optional<InstalledMapping> MappingOfDnatRule(const ipt::Rule& rule, net::Family family) {
  const auto* dnat = std::get_if<ipt::DnatTarget>(&rule.target);
  if (dnat == nullptr) return std::nullopt;
  InstalledMapping m;
  m.family = family;
  if (rule.header.dst && !rule.header.dst_invert) m.host_ip = rule.header.dst->address();
  std::optional<Protocol> protocol = rule.header.protocol;
  for (const auto& match : rule.matches) {
    if (const auto* port = std::get_if<ipt::PortMatch>(&match)) {
      protocol = port->protocol;
      m.host_port = port->dport;
    }
  }
  if (!protocol || m.host_port == 0) return std::nullopt;
  m.protocol = *protocol;
  m.target = TargetText(dnat->address, dnat->port);
  return m;
}

std::optional<DnatMapShape> DnatMapShapeOf(const std::string& name) {
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    const std::string suffix = nft::NetworkNames::Suffix(family);
    if (!name.ends_with(suffix)) continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    if (stem.ends_with("_dnat_any")) return DnatMapShape{family, false};
    if (stem.ends_with("_dnat_ip")) return DnatMapShape{family, true};
  }
  return std::nullopt;
}

std::vector<uint8_t> DnatAnyKey(Protocol protocol, int port) {
  return nft::DnatKey(PortMapping{.host_port = port, .protocol = protocol});
}

std::optional<InstalledMapping> MappingOfMapElement(const netfilter::SetElement& element,
                                                    const DnatMapShape& shape) {
  const size_t address_size = shape.family == net::Family::kV4 ? 4 : 16;
  const size_t key_size = (shape.with_host_ip ? address_size : 0) + 8;
  if (element.key.size() != key_size || element.data.size() != address_size + 4) {
    return std::nullopt;
  }
  InstalledMapping m;
  m.layout = "nftables";
  m.family = shape.family;
  m.container_id = element.comment;
  const uint8_t* key = element.key.data();
  if (shape.with_host_ip) {
    m.host_ip = net::IpAddress::FromBytes(shape.family, key);
    key += address_size;
  }
  std::optional<Protocol> protocol;
  for (const auto p : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
    if (ProtocolNumber(p) == key[0]) protocol = p;
  }
  if (!protocol) return std::nullopt;
  m.protocol = *protocol;
  m.host_port = (key[4] << 8) | key[5];
  const uint8_t* value = element.data.data();
  m.target = TargetText(net::IpAddress::FromBytes(shape.family, value),
                        (value[address_size] << 8) | value[address_size + 1]);
  return m;
}

bool EntryRuleMayMatch(const ipt::Rule& rule, net::Family family, const std::set<PortKey>& only) {
  if (!rule.header.protocol) return true;
  for (const auto& match : rule.matches) {
    const auto* multiport = std::get_if<ipt::MultiportMatch>(&match);
    if (multiport == nullptr) continue;
    for (const int port : multiport->dports) {
      if (only.count({family, *rule.header.protocol, port}) > 0) return true;
    }
    return false;
  }
  return true;
}

bool RawEntryMayMatch(netfilter::ByteView bytes, net::Family family,
                      const std::set<PortKey>& only) {
  // The ports are read in place, the rule is not decoded: this runs over every entry rule.
  const auto ports = ipt::NftRuleMultiportPorts(bytes);
  if (!ports) return true;  // no multiport to judge by: decoded in full
  return std::any_of(only.begin(), only.end(), [&](const PortKey& key) {
    return key.family == family && ports->Contains(key.port);
  });
}

bool RawRuleMayBeDnat(netfilter::ByteView bytes) {
  constexpr char kName[] = "DNAT";  // sizeof counts its NUL, as NFTA_TARGET_NAME holds it
  return ::memmem(bytes.data(), bytes.size(), kName, sizeof(kName)) != nullptr;
}

std::vector<InstalledMapping> ParseOurTableListing(
    const std::string& json, const std::map<std::string, std::string>& known) {
  std::vector<InstalledMapping> out;
  const Json doc = Json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("nftables")) return out;
  auto networks = NetworksByPrefix(doc["nftables"]);
  networks.insert(known.begin(), known.end());
  for (const auto& object : doc["nftables"]) {
    if (!object.contains("map")) continue;
    const Json& map = object["map"];
    const std::string name = map.value("name", "");
    const bool v4 = name.ends_with("_v4");
    if (name.find("_dnat_") == std::string::npos || !(v4 || name.ends_with("_v6"))) continue;
    const auto network = networks.find(name.substr(0, name.find('_')));
    for (const auto& pair : map.value("elem", Json::array())) {
      auto m = MappingOfElement(pair, v4 ? net::Family::kV4 : net::Family::kV6);
      if (!m) continue;
      m->layout = "nftables";
      if (network != networks.end()) m->network = network->second;
      out.push_back(std::move(*m));
    }
  }
  return out;
}

std::set<std::string> NetworkPrefixes(const std::string& json) {
  std::set<std::string> out;
  const Json doc = Json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("nftables")) return out;
  for (const auto& object : doc["nftables"]) {
    if (!object.contains("map")) continue;
    const std::string name = object["map"].value("name", "");
    if (name.find("_dnat_") != std::string::npos) out.insert(name.substr(0, name.find('_')));
  }
  return out;
}

std::string NetworkOfChainListing(const std::string& text) {
  const std::string lead = "comment \"";
  const size_t at = text.find(lead);
  if (at == std::string::npos) return "";
  const size_t end = text.find('"', at + lead.size());
  if (end == std::string::npos) return "";
  return NetworkOfComment(text.substr(at + lead.size(), end - at - lead.size()));
}

std::vector<InstalledMapping> ParseReferenceTableListing(const std::string& json,
                                                         net::Family family) {
  std::vector<InstalledMapping> out;
  const Json doc = Json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("nftables")) return out;
  for (const auto& object : doc["nftables"]) {
    if (!object.contains("rule")) continue;
    if (auto m = MappingOfReferenceRule(object["rule"], family)) out.push_back(std::move(*m));
  }
  return out;
}

Result<std::vector<InstalledMapping>> ListInstalledMappings() { return List(nullptr); }

Result<std::vector<InstalledMapping>> ListInstalledMappings(const std::set<PortKey>& only) {
  return List(&only);
}

}  // namespace nodegate::portmap
