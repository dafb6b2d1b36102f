// Reads back every host-port mapping of the node, layout by layout: the reference's iptables
// layout (entry rules of CNI-HOSTPORT-DNAT name the owner and the CNI-DN-* chain, whose DNAT
// rules hold host IP, protocol, port and target) in nf_tables and in the legacy x_tables, our
// `inet cni_hostport` maps, and the reference's `ip`/`ip6 cni_hostport` rules. Nothing is
// created: a missing table, or an unloaded legacy one, is skipped.
#include "plugins/portmap/installed_mappings.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <string_view>

#include "lib/netfilter/nft_expr.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/iptables/legacy/encode.h"
#include "plugins/portmap/iptables/legacy/ops.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/nftables/rules.h"

namespace nodegate::portmap {
namespace {

constexpr int kStaleRetries = 20;

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

// Which of the nftables layouts' tables exist: [ours, the reference's ip, ip6]. One request
// each; a table that is not there is not read.
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

// Our table over netlink. With keys sought, each network's dnat_any maps are asked for those
// keys only (one request each, whatever the map holds); its dnat_ip maps (host-IP mappings,
// rare) are read whole, since a claim of every address overlaps all of theirs. Without, every
// dnat map is read whole. A network's name comes from its chain's comment, read only when one
// of its elements is kept.
Status AppendOurTable(const std::set<PortKey>* only, std::vector<InstalledMapping>& out) {
  NG_ASSIGN_OR_RETURN(auto reader,
                      netfilter::TableReader::Open(netfilter::kNfprotoInet, nft::kTable));
  NG_ASSIGN_OR_RETURN(const auto sets, reader.SetNames());
  std::map<std::string, std::string> networks;  // prefix -> name, read when first needed
  for (const auto& set : sets) {
    const auto shape = DnatMapShapeOf(set);
    if (!shape) continue;
    std::vector<netfilter::SetElement> elements;
    if (only == nullptr || shape->with_host_ip) {
      NG_ASSIGN_OR_RETURN(elements, reader.Elements(set));
    } else {
      for (const auto& key : *only) {
        if (key.family != shape->family) continue;
        NG_ASSIGN_OR_RETURN(auto element, reader.Element(set, DnatAnyKey(key.protocol, key.port)));
        if (element) elements.push_back(std::move(*element));
      }
    }
    for (const auto& element : elements) {
      auto mapping = MappingOfMapElement(element, *shape);
      if (!mapping || (only && only->count(KeyOf(*mapping)) == 0)) continue;
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

// The reference nftables backend's table of `family` (`ip`/`ip6 cni_hostport`): its dnat rules,
// each commented with the container ID (the network is not recorded there).
Status AppendReferenceTable(uint8_t nfproto, net::Family family, const std::set<PortKey>* only,
                            std::vector<InstalledMapping>& out) {
  NG_ASSIGN_OR_RETURN(auto reader, netfilter::TableReader::Open(nfproto, nft::kTable));
  NG_ASSIGN_OR_RETURN(const auto rules, reader.Rules(""));
  for (const auto& rule : rules) {
    const auto exprs = netfilter::DecodeExpressions(rule.expressions);
    if (!exprs) continue;
    auto mapping = MappingOfReferenceRule(*exprs, family);
    if (!mapping || (only && only->count(KeyOf(*mapping)) == 0)) continue;
    mapping->container_id = netfilter::UserDataComment(rule.userdata);
    out.push_back(std::move(*mapping));
  }
  return OkStatus();
}

// Our table and the reference nftables backend's, over netlink.
Status AppendNftables(const std::set<PortKey>* only, std::vector<InstalledMapping>& out) {
  auto present = NftablesTablesPresent();
  if (!present.ok()) return OkStatus();  // no nf_tables in this kernel: no mappings there
  if ((*present)[0]) NG_RETURN_IF_ERROR(AppendOurTable(only, out));
  if ((*present)[1]) {
    NG_RETURN_IF_ERROR(AppendReferenceTable(netfilter::kNfprotoIpv4, net::Family::kV4, only, out));
  }
  if ((*present)[2]) {
    NG_RETURN_IF_ERROR(AppendReferenceTable(netfilter::kNfprotoIpv6, net::Family::kV6, only, out));
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

std::optional<InstalledMapping> MappingOfReferenceRule(const std::vector<netfilter::Expr>& exprs,
                                                       net::Family family) {
  namespace expr = netfilter::expr;
  // What each register holds: a header field loaded into it, or immediate data.
  enum class Field { kNone, kDaddr, kProtocol, kDport };
  std::map<size_t, Field> loaded;
  std::map<size_t, std::vector<uint8_t>> immediate;
  const size_t address = family == net::Family::kV4 ? 4 : 16;
  const uint32_t daddr_offset = family == net::Family::kV4 ? 16 : 24;
  const uint32_t protocol_offset = family == net::Family::kV4 ? 9 : 6;
  InstalledMapping m;
  m.family = family;
  m.layout = "nftables-reference";
  std::optional<Protocol> protocol;
  bool dnat = false;
  for (const auto& e : exprs) {
    if (const auto* p = std::get_if<expr::Payload>(&e)) {
      Field field = Field::kNone;
      if (p->base == NFT_PAYLOAD_NETWORK_HEADER && p->offset == daddr_offset && p->len == address) {
        field = Field::kDaddr;
      } else if (p->base == NFT_PAYLOAD_NETWORK_HEADER && p->offset == protocol_offset &&
                 p->len == 1) {
        field = Field::kProtocol;
      } else if (p->base == NFT_PAYLOAD_TRANSPORT_HEADER && p->offset == 2 && p->len == 2) {
        field = Field::kDport;
      }
      loaded[netfilter::WordOfRegister(p->dreg)] = field;
    } else if (const auto* meta = std::get_if<expr::Meta>(&e)) {
      loaded[netfilter::WordOfRegister(meta->dreg)] =
          meta->key == NFT_META_L4PROTO ? Field::kProtocol : Field::kNone;
    } else if (const auto* cmp = std::get_if<expr::Cmp>(&e)) {
      if (cmp->op != NFT_CMP_EQ) continue;
      switch (loaded[netfilter::WordOfRegister(cmp->sreg)]) {
        case Field::kDaddr:
          if (cmp->data.size() == address) {
            m.host_ip = net::IpAddress::FromBytes(family, cmp->data.data());
          }
          break;
        case Field::kProtocol:
          for (const auto p : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
            if (cmp->data.size() == 1 && ProtocolNumber(p) == cmp->data[0]) protocol = p;
          }
          break;
        case Field::kDport:
          if (cmp->data.size() == 2) m.host_port = (cmp->data[0] << 8) | cmp->data[1];
          break;
        case Field::kNone:
          break;
      }
    } else if (const auto* imm = std::get_if<expr::Immediate>(&e)) {
      immediate[netfilter::WordOfRegister(imm->dreg)] = imm->data;
    } else if (const auto* nat = std::get_if<expr::Nat>(&e)) {
      if (nat->type != NFT_NAT_DNAT || nat->reg_addr_min == 0) return std::nullopt;
      const auto& addr = immediate[netfilter::WordOfRegister(nat->reg_addr_min)];
      const auto& port = immediate[netfilter::WordOfRegister(nat->reg_proto_min)];
      if (addr.size() != address) return std::nullopt;
      m.target =
          TargetText(net::IpAddress::FromBytes(family, addr.data()),
                     nat->reg_proto_min != 0 && port.size() >= 2 ? (port[0] << 8) | port[1] : 0);
      dnat = true;
    }
  }
  if (!dnat || !protocol || m.host_port == 0) return std::nullopt;
  m.protocol = *protocol;
  return m;
}

Result<std::vector<InstalledMapping>> ListInstalledMappings() { return List(nullptr); }

Result<std::vector<InstalledMapping>> ListInstalledMappings(const std::set<PortKey>& only) {
  return List(&only);
}

}  // namespace nodegate::portmap
