#include "plugins/bridge/masq.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "lib/base/hash.h"
#include "lib/cni/logging.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"
#include "lib/netfilter/ruleset.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nat_table.h"
#include "plugins/portmap/iptables/nat_tables.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::bridge {
namespace {

namespace ipt = portmap::ipt;
using netfilter::Bytes;
using netfilter::Expr;
using portmap::IptablesMode;

constexpr char kPostrouting[] = "POSTROUTING";
constexpr int kMasqStaleRetries = 20;

const net::Family kFamilies[] = {net::Family::kV4, net::Family::kV6};

net::IpPrefix Multicast(net::Family family) {
  return family == net::Family::kV4 ? *net::IpPrefix::Parse("224.0.0.0/4")
                                    : *net::IpPrefix::Parse("ff00::/8");
}

// ---- iptables

struct FamilyRules {
  std::vector<ipt::Rule> chain;  // the container chain's rules, in order
  std::vector<ipt::Rule> jumps;  // POSTROUTING's jumps to it
};

FamilyRules RulesOf(const MasqPlan& plan, net::Family family) {
  FamilyRules out;
  const std::vector<ipt::Match> comment = {ipt::CommentMatch{plan.comment}};
  for (const net::IpPrefix& address : plan.addresses) {
    if (address.family() != family) continue;
    ipt::Header accept;
    accept.dst = address.Masked();
    ipt::Header masq;
    masq.dst = Multicast(family);
    masq.dst_invert = true;
    ipt::Header jump;
    jump.src = net::IpPrefix(address.address(), address.address().bit_length());
    for (ipt::Rule rule : {ipt::Rule{accept, comment, ipt::JumpTarget{ipt::kAcceptTarget}},
                           ipt::Rule{masq, comment, ipt::MasqueradeTarget{}}}) {
      // Two addresses of one subnet make the same rule once (AppendUnique).
      if (std::find(out.chain.begin(), out.chain.end(), rule) == out.chain.end()) {
        out.chain.push_back(std::move(rule));
      }
    }
    ipt::Rule jump_rule{jump, comment, ipt::JumpTarget{plan.chain}};
    if (std::find(out.jumps.begin(), out.jumps.end(), jump_rule) == out.jumps.end()) {
      out.jumps.push_back(std::move(jump_rule));
    }
  }
  return out;
}

IptablesMode ModeOf(ipt::NatTables& tables, net::Family family) {
  return tables.ChooseMode(family, std::nullopt).mode;
}

// The rules of `rules` in `table`, each added when missing (AppendUnique). A chain created now
// has no rules and nothing jumps to it yet: nothing to look up (POSTROUTING may be long).
Result<bool> ApplyFamily(ipt::NatTable& table, const std::string& chain, const FamilyRules& rules) {
  bool changed = false;
  const bool fresh = !table.HasChain(chain);
  if (fresh) {
    NG_RETURN_IF_ERROR(table.CreateChain(chain));
    changed = true;
  }
  auto append_unique = [&](const std::string& in, const ipt::Rule& rule) -> Status {
    if (!fresh && table.HasChain(in)) {
      NG_ASSIGN_OR_RETURN(const bool present, table.HasRule(in, rule));
      if (present) return OkStatus();
    }
    changed = true;
    return table.Append(in, rule);
  };
  for (const ipt::Rule& rule : rules.chain) NG_RETURN_IF_ERROR(append_unique(chain, rule));
  for (const ipt::Rule& rule : rules.jumps) NG_RETURN_IF_ERROR(append_unique(kPostrouting, rule));
  return changed;
}

// Removes `chains` and the jumps to them from POSTROUTING; false when none exists.
Result<bool> RemoveChains(ipt::NatTable& table, const std::set<std::string>& chains) {
  std::set<std::string> present;
  for (const std::string& chain : chains) {
    if (table.HasChain(chain)) present.insert(chain);
  }
  if (present.empty()) return false;
  NG_RETURN_IF_ERROR(table.DeleteJumps(kPostrouting, present));
  for (const std::string& chain : present) {
    NG_RETURN_IF_ERROR(table.Flush(chain));
    NG_RETURN_IF_ERROR(table.DeleteChain(chain));
  }
  return true;
}

// The modes whose table nat may hold rules of ours: nf_tables when it answers, the legacy
// tables when loaded (reading unloaded ones would load them).
std::vector<IptablesMode> ModesPresent(ipt::NatTables& tables, net::Family family) {
  std::vector<IptablesMode> modes;
  if (tables.Usable(family, IptablesMode::kNft)) modes.push_back(IptablesMode::kNft);
  if (tables.MayHoldChain(family, IptablesMode::kLegacy, kPostrouting)) {
    modes.push_back(IptablesMode::kLegacy);
  }
  return modes;
}

std::string Digit(net::Family family) { return family == net::Family::kV4 ? "4" : "6"; }

// "name: \"N\" id: \"ID\"" -> (N, ID); nullopt for other comments and cut ones.
std::optional<std::pair<std::string, std::string>> ParseMasqComment(const std::string& comment) {
  static constexpr std::string_view kHead = "name: \"";
  static constexpr std::string_view kMiddle = "\" id: \"";
  if (comment.rfind(kHead, 0) != 0 || comment.size() < kHead.size() + kMiddle.size() + 1 ||
      comment.back() != '"') {
    return std::nullopt;
  }
  const size_t middle = comment.find(kMiddle, kHead.size());
  if (middle == std::string::npos) return std::nullopt;
  return std::make_pair(
      comment.substr(kHead.size(), middle - kHead.size()),
      comment.substr(middle + kMiddle.size(), comment.size() - middle - kMiddle.size() - 1));
}

// ---- nftables

uint8_t NfProto(net::Family f) { return f == net::Family::kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6; }
uint32_t SaddrOffset(net::Family f) { return f == net::Family::kV4 ? 12 : 8; }
uint32_t DaddrOffset(net::Family f) { return f == net::Family::kV4 ? 16 : 24; }

Bytes AddressBytes(const net::IpAddress& a) {
  return Bytes(a.bytes().begin(), a.bytes().begin() + a.byte_length());
}

// `ip[6] daddr <op> <prefix>` as nft 1.0 writes it: a whole-byte prefix is a shorter load, any
// other prefix a whole-address load and a mask (observed with nft --debug=netlink).
void AddPrefixMatch(std::vector<Expr>& exprs, uint32_t offset, const net::IpPrefix& prefix,
                    uint32_t op) {
  namespace e = netfilter::expr;
  const Bytes network = AddressBytes(prefix.Network());
  const uint32_t full = static_cast<uint32_t>(network.size());
  if (prefix.length() % 8 == 0 && prefix.length() > 0) {
    const uint32_t len = static_cast<uint32_t>(prefix.length() / 8);
    exprs.push_back(e::Payload{NFT_PAYLOAD_NETWORK_HEADER, offset, len, NFT_REG_1});
    exprs.push_back(e::Cmp{NFT_REG_1, op, Bytes(network.begin(), network.begin() + len)});
    return;
  }
  Bytes mask(full, 0);
  for (int bit = 0; bit < prefix.length(); ++bit)
    mask[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
  exprs.push_back(e::Payload{NFT_PAYLOAD_NETWORK_HEADER, offset, full, NFT_REG_1});
  exprs.push_back(e::Bitwise{NFT_REG_1, NFT_REG_1, mask, Bytes(full, 0)});
  exprs.push_back(e::Cmp{NFT_REG_1, op, network});
}

void AddFamily(std::vector<Expr>& exprs, net::Family f) {
  namespace e = netfilter::expr;
  exprs.push_back(e::Meta{NFT_META_NFPROTO, NFT_REG_1});
  exprs.push_back(e::Cmp{NFT_REG_1, NFT_CMP_EQ, Bytes{NfProto(f)}});
}

// postrouting: multicast returns, everything else goes to masq_checks.
std::vector<std::vector<Expr>> PostroutingRules() {
  namespace e = netfilter::expr;
  std::vector<std::vector<Expr>> rules;
  for (const net::Family f : kFamilies) {
    std::vector<Expr> r;
    AddFamily(r, f);
    AddPrefixMatch(r, DaddrOffset(f), Multicast(f), NFT_CMP_EQ);
    r.push_back(e::Verdict{NFT_RETURN, ""});
    rules.push_back(std::move(r));
  }
  rules.push_back({e::Verdict{NFT_GOTO, kMasqChecksChain}});
  return rules;
}

// `ip saddr == <ip> ip daddr != <subnet> masquerade`.
std::vector<Expr> MasqRule(const net::IpPrefix& address) {
  namespace e = netfilter::expr;
  const net::Family f = address.family();
  std::vector<Expr> r;
  AddFamily(r, f);
  const Bytes ip = AddressBytes(address.address());
  r.push_back(e::Payload{NFT_PAYLOAD_NETWORK_HEADER, SaddrOffset(f),
                         static_cast<uint32_t>(ip.size()), NFT_REG_1});
  r.push_back(e::Cmp{NFT_REG_1, NFT_CMP_EQ, ip});
  AddPrefixMatch(r, DaddrOffset(f), address, NFT_CMP_NEQ);
  r.push_back(e::Masquerade{});
  return r;
}

std::string Hash16(std::string_view text) { return Sha512Hex(text).substr(0, 16); }

std::string InstanceHash(const MasqAttachment& a) {
  return Hash16(a.network) + "-" + Hash16(a.ifname + ":" + a.container_id);
}

std::string WithoutQuotes(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
  return text;
}

// The rules of masq_checks whose comment starts with `prefix`; none when the table or chain is
// missing.
Result<std::vector<netfilter::RuleRecord>> RulesCommented(netfilter::TableReads& reader,
                                                          const std::string& prefix) {
  NG_ASSIGN_OR_RETURN(auto rules, reader.Rules(kMasqChecksChain));
  std::vector<netfilter::RuleRecord> out;
  for (auto& r : rules) {
    if (netfilter::UserDataComment(r.userdata).rfind(prefix, 0) == 0) out.push_back(std::move(r));
  }
  return out;
}

Result<bool> NftTableExists(netfilter::Ruleset& ruleset) {
  NG_ASSIGN_OR_RETURN(const auto present,
                      ruleset.HasTables({{netfilter::kNfprotoInet, kMasqTable}}));
  return present.front();
}

// What a batch of the masquerade table is built from: the table's reads, made after the
// generation the batch goes with.
using NftBuild = std::function<Result<std::optional<netfilter::NftBatch>>(netfilter::TableReads&)>;

// Sends `build`'s batch on the generation read with it, again when another writer committed in
// between. `build` returns nullopt when there is nothing to send.
Status CommitNft(netfilter::Ruleset& ruleset, const NftBuild& build) {
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(const auto reader, ruleset.OpenTable(netfilter::kNfprotoInet, kMasqTable));
    NG_ASSIGN_OR_RETURN(const uint32_t generation, reader->Generation());
    NG_ASSIGN_OR_RETURN(std::optional<netfilter::NftBatch> batch, build(*reader));
    if (!batch || batch->empty()) return OkStatus();
    auto sent = ruleset.Commit(*batch, generation);
    if (!sent.ok()) {
      if (netfilter::IsStaleGeneration(sent.error()) && attempt < kMasqStaleRetries) continue;
      return sent.error().WithContext("nftables " + std::string(kMasqTable));
    }
    if (!sent->empty()) {
      const auto& refusal = sent->front();
      return Error(kErrKernel, "nftables " + std::string(kMasqTable) + ": change " +
                                   std::to_string(refusal.change) +
                                   " refused: " + std::strerror(refusal.error) +
                                   (refusal.ext_ack.empty() ? "" : " (" + refusal.ext_ack + ")"));
    }
    return OkStatus();
  }
}

}  // namespace

Status SetupNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a, const MasqPlan& plan) {
  const std::string comment = NftMasqComment(a);
  return CommitNft(
      ruleset, [&](netfilter::TableReads& reader) -> Result<std::optional<netfilter::NftBatch>> {
        netfilter::NftBatch batch(netfilter::kNfprotoInet, kMasqTable);
        batch.AddTable(
            {.comment = "Masquerading for plugins from github.com/containernetworking/plugins"});
        batch.AddChain({.name = kMasqChecksChain,
                        .comment = "Masquerade traffic from certain IPs to any (non-multicast) IP "
                                   "outside their subnet"});
        batch.AddChain({.name = kMasqPostroutingChain,
                        .hook = netfilter::NftHook{
                            .num = NF_INET_POST_ROUTING, .priority = 100, .type = "nat"}});
        // postrouting as upstream keeps it: rewritten only when it is not exactly its three rules.
        NG_ASSIGN_OR_RETURN(auto current, reader.Rules(kMasqPostroutingChain));
        const auto wanted = PostroutingRules();
        bool same = current.size() == wanted.size();
        for (size_t i = 0; same && i < current.size(); ++i) {
          auto decoded = netfilter::DecodeExpressions(current[i].expressions);
          same = decoded && *decoded == wanted[i];
        }
        if (!same) {
          batch.FlushChain(kMasqPostroutingChain);
          for (const auto& exprs : wanted)
            batch.AddRule({.chain = kMasqPostroutingChain, .exprs = exprs});
        }
        NG_ASSIGN_OR_RETURN(auto stale, RulesCommented(reader, InstanceHash(a)));
        for (const auto& r : stale) {
          batch.DeleteRule(netfilter::kNfprotoInet, kMasqTable, kMasqChecksChain, r.handle);
        }
        for (const net::IpPrefix& address : plan.addresses) {
          batch.AddRule(
              {.chain = kMasqChecksChain, .exprs = MasqRule(address), .comment = comment});
        }
        return std::optional<netfilter::NftBatch>(std::move(batch));
      });
}

Status TeardownNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a) {
  NG_ASSIGN_OR_RETURN(const bool exists, NftTableExists(ruleset));
  if (!exists) return OkStatus();
  return CommitNft(
      ruleset, [&](netfilter::TableReads& reader) -> Result<std::optional<netfilter::NftBatch>> {
        NG_ASSIGN_OR_RETURN(auto rules, RulesCommented(reader, InstanceHash(a)));
        if (rules.empty()) return std::optional<netfilter::NftBatch>();
        netfilter::NftBatch batch(netfilter::kNfprotoInet, kMasqTable);
        for (const auto& r : rules) {
          batch.DeleteRule(netfilter::kNfprotoInet, kMasqTable, kMasqChecksChain, r.handle);
        }
        return std::optional<netfilter::NftBatch>(std::move(batch));
      });
}

Status CheckNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a, const MasqPlan& plan) {
  NG_ASSIGN_OR_RETURN(const auto reader, ruleset.OpenTable(netfilter::kNfprotoInet, kMasqTable));
  NG_ASSIGN_OR_RETURN(auto rules, RulesCommented(*reader, InstanceHash(a)));
  for (const net::IpPrefix& address : plan.addresses) {
    const auto wanted = MasqRule(address);
    bool found = false;
    for (const auto& r : rules) {
      auto decoded = netfilter::DecodeExpressions(r.expressions);
      found = found || (decoded && *decoded == wanted);
    }
    if (!found) {
      return Error(kErrCheckFailed, "nftables " + std::string(kMasqTable) +
                                        ": no masquerade rule for " + address.ToString() + " in " +
                                        kMasqChecksChain);
    }
  }
  return OkStatus();
}

MasqBackend ChooseMasqBackend(std::optional<MasqBackend> configured) {
  if (configured) return *configured;
  const auto node = portmap::NodeView::Real();
  if (!node.resolve_binary("iptables") && node.resolve_binary("nft")) return MasqBackend::kNftables;
  return MasqBackend::kIptables;
}

std::string NftMasqComment(const MasqAttachment& a) {
  std::string comment = InstanceHash(a) + ", net: " + WithoutQuotes(a.network) +
                        ", if: " + WithoutQuotes(a.ifname) +
                        ", id: " + WithoutQuotes(a.container_id);
  if (comment.size() > 128) comment.resize(128);
  return comment;
}

std::string NftMasqNetworkPrefix(const std::string& network) { return Hash16(network); }

Status SetupMasq(MasqBackend backend, const MasqAttachment& a, const MasqPlan& plan) {
  if (backend == MasqBackend::kNftables) return SetupNftMasq(netfilter::RealRuleset(), a, plan);
  return SetupIptablesMasq(ipt::RealNatTables(), plan);
}

Status SetupIptablesMasq(ipt::NatTables& tables, const MasqPlan& plan) {
  for (const net::Family family : kFamilies) {
    const FamilyRules rules = RulesOf(plan, family);
    if (rules.chain.empty()) continue;
    const IptablesMode mode = ModeOf(tables, family);
    Status s = tables.Transact(
        family, mode, [&](ipt::NatTable& table) { return ApplyFamily(table, plan.chain, rules); },
        {plan.chain, kPostrouting});
    if (!s.ok()) {
      return s.error().WithContext("ipMasq (IPv" + Digit(family) + ", iptables " +
                                   std::string(portmap::IptablesModeName(mode)) + ")");
    }
  }
  return OkStatus();
}

std::vector<std::string> TeardownIptablesMasq(ipt::NatTables& tables, const MasqAttachment& a) {
  const std::string chain = MasqChainName(a.network, a.container_id);
  std::vector<std::string> errors;
  for (const net::Family family : kFamilies) {
    for (const IptablesMode mode : ModesPresent(tables, family)) {
      Status s = tables.Transact(family, mode,
                                 [&](ipt::NatTable& table) { return RemoveChains(table, {chain}); },
                                 {chain, kPostrouting});
      if (!s.ok()) errors.push_back(s.error().msg);
    }
  }
  return errors;
}

Status TeardownMasq(const MasqAttachment& a) {
  std::vector<std::string> errors = TeardownIptablesMasq(ipt::RealNatTables(), a);
  if (Status s = TeardownNftMasq(netfilter::RealRuleset(), a); !s.ok()) {
    errors.push_back(s.error().msg);
  }
  if (!errors.empty()) {
    std::string details;
    for (size_t i = 1; i < errors.size(); ++i) details += (i > 1 ? "; " : "") + errors[i];
    return Error(kErrKernel, "ipMasq teardown: " + errors.front(), details);
  }
  return OkStatus();
}

Status CheckMasq(MasqBackend backend, const MasqAttachment& a, const MasqPlan& plan) {
  if (backend == MasqBackend::kNftables) return CheckNftMasq(netfilter::RealRuleset(), a, plan);
  return CheckIptablesMasq(ipt::RealNatTables(), plan);
}

Status CheckIptablesMasq(ipt::NatTables& tables, const MasqPlan& plan) {
  for (const net::Family family : kFamilies) {
    const FamilyRules rules = RulesOf(plan, family);
    if (rules.chain.empty()) continue;
    const IptablesMode mode = ModeOf(tables, family);
    Status found = OkStatus();
    NG_RETURN_IF_ERROR(tables.Transact(
        family, mode,
        [&](ipt::NatTable& table) -> Result<bool> {
          auto missing = [&](const std::string& what) {
            return Error(kErrCheckFailed, table.name() + " table nat: " + what);
          };
          if (!table.HasChain(plan.chain)) {
            found = missing("chain " + plan.chain + " not found");
            return false;
          }
          auto check = [&](const std::string& chain, const ipt::Rule& rule) -> Status {
            if (!table.HasChain(chain)) return missing("chain " + chain + " not found");
            NG_ASSIGN_OR_RETURN(const bool present, table.HasRule(chain, rule));
            if (!present)
              return missing("rule \"-A " + chain + " " + rule.ToString() + "\" not found");
            return OkStatus();
          };
          for (const auto& rule : rules.chain) {
            if (Status s = check(plan.chain, rule); !s.ok()) {
              found = s;
              return false;
            }
          }
          for (const auto& rule : rules.jumps) {
            if (Status s = check(kPostrouting, rule); !s.ok()) {
              found = s;
              return false;
            }
          }
          return false;
        },
        {plan.chain, kPostrouting}));
    NG_RETURN_IF_ERROR(found);
  }
  return OkStatus();
}

std::vector<std::string> GcIptablesMasq(ipt::NatTables& tables, const std::string& network,
                                        const std::set<std::string>& valid_ids) {
  std::vector<std::string> errors;
  for (const net::Family family : kFamilies) {
    for (const IptablesMode mode : ModesPresent(tables, family)) {
      Status s = tables.Transact(
          family, mode,
          [&](ipt::NatTable& table) -> Result<bool> {
            NG_ASSIGN_OR_RETURN(auto jumps, table.JumpComments(kPostrouting, "CNI-"));
            std::set<std::string> stale;
            for (const auto& [chain, comment] : jumps) {
              const auto owner = ParseMasqComment(comment);
              // Only this network's chains, and only those named after their owner (the chain of
              // a cut comment cannot be told apart from another network's).
              if (!owner || owner->first != network || valid_ids.count(owner->second) != 0 ||
                  MasqChainName(owner->first, owner->second) != chain) {
                continue;
              }
              cni::LogInfo("GC: removing ipMasq chain {} of container {} ({})", chain,
                           owner->second, table.name());
              stale.insert(chain);
            }
            return RemoveChains(table, stale);
          },
          {kPostrouting});
      if (!s.ok()) errors.push_back(s.error().msg);
    }
  }
  return errors;
}

Status GcNftMasq(netfilter::Ruleset& ruleset, const std::string& network,
                 const std::vector<cni::Attachment>& valid) {
  NG_ASSIGN_OR_RETURN(const bool exists, NftTableExists(ruleset));
  if (!exists) return OkStatus();
  std::set<std::string> valid_comments;
  for (const cni::Attachment& v : valid) {
    valid_comments.insert(
        NftMasqComment({.network = network, .ifname = v.ifname, .container_id = v.container_id}));
  }
  const std::string prefix = NftMasqNetworkPrefix(network) + "-";
  return CommitNft(
      ruleset, [&](netfilter::TableReads& reader) -> Result<std::optional<netfilter::NftBatch>> {
        NG_ASSIGN_OR_RETURN(auto rules, RulesCommented(reader, prefix));
        netfilter::NftBatch batch(netfilter::kNfprotoInet, kMasqTable);
        for (const auto& r : rules) {
          if (valid_comments.count(netfilter::UserDataComment(r.userdata)) == 0) {
            batch.DeleteRule(netfilter::kNfprotoInet, kMasqTable, kMasqChecksChain, r.handle);
          }
        }
        return std::optional<netfilter::NftBatch>(std::move(batch));
      });
}

Status GcMasq(const std::string& network, const std::vector<cni::Attachment>& valid) {
  std::set<std::string> valid_ids;
  for (const cni::Attachment& v : valid) valid_ids.insert(v.container_id);
  std::vector<std::string> errors = GcIptablesMasq(ipt::RealNatTables(), network, valid_ids);
  if (Status nft = GcNftMasq(netfilter::RealRuleset(), network, valid); !nft.ok()) {
    errors.push_back(nft.error().msg);
  }
  if (!errors.empty()) {
    std::string details;
    for (size_t i = 1; i < errors.size(); ++i) details += (i > 1 ? "; " : "") + errors[i];
    return Error(kErrKernel, "GC of ipMasq rules: " + errors.front(), details);
  }
  return OkStatus();
}

}  // namespace nodegate::bridge
