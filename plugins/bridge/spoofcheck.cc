#include "plugins/bridge/spoofcheck.h"

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_bridge.h>

#include <cstring>
#include <optional>
#include <vector>

#include "lib/cni/logging.h"
#include "lib/net/mac.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"
#include "lib/netlink/link.h"

namespace nodegate::bridge {
namespace {

using netfilter::Bytes;
using netfilter::Expr;
namespace e = netfilter::expr;

constexpr uint8_t kNfprotoBridge = 7;  // NFPROTO_BRIDGE
constexpr char kTable[] = "nat";
constexpr char kPrerouting[] = "PREROUTING";
constexpr char kCommentPrefix[] = "macspoofchk-";
constexpr int kSpoofcheckStaleRetries = 20;

std::string RefId(const std::string& container_id, const std::string& ifname) {
  return container_id + "-" + ifname;
}
std::string IfaceChain(const std::string& ref) { return "cni-br-iface-" + ref; }
std::string MacChain(const std::string& ref) { return IfaceChain(ref) + "-mac"; }
std::string Comment(const std::string& ref) { return kCommentPrefix + ref; }

Bytes IfnameBytes(const std::string& name) {
  Bytes out(16, 0);  // IFNAMSIZ, as nft compares iifname
  std::memcpy(out.data(), name.data(), std::min<size_t>(name.size(), 15));
  return out;
}

std::vector<Expr> PreroutingRule(const std::string& veth, const std::string& ref) {
  return {e::Meta{NFT_META_IIFNAME, NFT_REG_1}, e::Cmp{NFT_REG_1, NFT_CMP_EQ, IfnameBytes(veth)},
          e::Verdict{NFT_JUMP, IfaceChain(ref)}};
}

Result<std::vector<Expr>> MacRule(const std::string& mac_text) {
  auto mac = net::ParseMac(mac_text);
  if (!mac || mac->size() != 6) {
    return Error(kErrInvalidConfig, "macspoofchk: invalid container MAC \"" + mac_text + "\"");
  }
  return std::vector<Expr>{e::Payload{NFT_PAYLOAD_LL_HEADER, 6, 6, NFT_REG_1},
                           e::Cmp{NFT_REG_1, NFT_CMP_EQ, Bytes(mac->begin(), mac->end())},
                           e::Verdict{NFT_RETURN, ""}};
}

// Runs `build` on a fresh read of the table and commits its batch with that read's generation,
// again when another writer committed in between.
Status Commit(
    const std::function<Result<std::optional<netfilter::NftBatch>>(netfilter::TableReader&)>&
        build) {
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(auto reader, netfilter::TableReader::Open(kNfprotoBridge, kTable));
    NG_ASSIGN_OR_RETURN(const uint32_t generation, reader.Generation());
    NG_ASSIGN_OR_RETURN(std::optional<netfilter::NftBatch> batch, build(reader));
    if (!batch || batch->empty()) return OkStatus();
    auto sent = batch->Commit(generation);
    if (!sent.ok()) {
      if (netfilter::IsStaleGeneration(sent.error()) && attempt < kSpoofcheckStaleRetries) continue;
      return sent.error().WithContext("macspoofchk (nftables bridge nat)");
    }
    if (!sent->empty()) {
      return Error(kErrKernel,
                   "macspoofchk (nftables bridge nat): change " +
                       std::to_string(sent->front().change) +
                       " refused: " + std::strerror(sent->front().error) +
                       (sent->front().ext_ack.empty() ? "" : " (" + sent->front().ext_ack + ")"));
    }
    return OkStatus();
  }
}

// PREROUTING's rules commented for `ref` (all of ours when `ref` is empty).
Result<std::vector<netfilter::RuleRecord>> OurPreroutingRules(netfilter::TableReader& reader,
                                                              const std::string& ref) {
  NG_ASSIGN_OR_RETURN(auto rules, reader.Rules(kPrerouting));
  std::vector<netfilter::RuleRecord> out;
  const std::string want = ref.empty() ? kCommentPrefix : Comment(ref);
  for (auto& r : rules) {
    const std::string comment = netfilter::UserDataComment(r.userdata);
    if (ref.empty() ? comment.rfind(want, 0) == 0 : comment == want) out.push_back(std::move(r));
  }
  return out;
}

// Deletes `rules` of PREROUTING and the chains named `refs` (those that exist) in `batch`.
Status QueueRemoval(netfilter::TableReader& reader, netfilter::NftBatch& batch,
                    const std::vector<netfilter::RuleRecord>& rules,
                    const std::vector<std::string>& refs) {
  for (const auto& r : rules) batch.DeleteRule(kNfprotoBridge, kTable, kPrerouting, r.handle);
  for (const std::string& ref : refs) {
    for (const std::string& chain : {IfaceChain(ref), MacChain(ref)}) {
      NG_ASSIGN_OR_RETURN(auto exists, reader.ChainComment(chain));
      if (exists) batch.DeleteChain(chain);
    }
  }
  return OkStatus();
}

}  // namespace

Status SetupSpoofCheck(const SpoofCheck& check) {
  const std::string ref = RefId(check.container_id, check.ifname);
  NG_ASSIGN_OR_RETURN(std::vector<Expr> mac_rule, MacRule(check.container_mac));
  return Commit([&](netfilter::TableReader& reader) -> Result<std::optional<netfilter::NftBatch>> {
    netfilter::NftBatch batch(kNfprotoBridge, kTable);
    batch.AddTable({});
    batch.AddChain(
        {.name = kPrerouting,
         .hook = netfilter::NftHook{.num = NF_BR_PRE_ROUTING, .priority = -300, .type = "filter"}});
    batch.AddChain({.name = IfaceChain(ref)});
    batch.AddChain({.name = MacChain(ref)});
    batch.FlushChain(IfaceChain(ref));
    batch.FlushChain(MacChain(ref));
    // A repeated ADD replaces its PREROUTING rule (the reference adds a second one).
    NG_ASSIGN_OR_RETURN(auto previous, OurPreroutingRules(reader, ref));
    for (const auto& r : previous) batch.DeleteRule(kNfprotoBridge, kTable, kPrerouting, r.handle);
    const std::string comment = Comment(ref);
    batch.AddRule(
        {.chain = kPrerouting, .exprs = PreroutingRule(check.host_veth, ref), .comment = comment});
    batch.AddRule({.chain = IfaceChain(ref),
                   .exprs = {e::Verdict{NFT_JUMP, MacChain(ref)}},
                   .comment = comment});
    batch.AddRule({.chain = MacChain(ref), .exprs = mac_rule, .comment = comment});
    batch.AddRule({.chain = MacChain(ref), .exprs = {e::Verdict{NF_DROP, ""}}, .comment = comment});
    return std::optional<netfilter::NftBatch>(std::move(batch));
  });
}

Status TeardownSpoofCheck(const std::string& container_id, const std::string& ifname) {
  NG_ASSIGN_OR_RETURN(const bool exists, netfilter::HasTable(kNfprotoBridge, kTable));
  if (!exists) return OkStatus();
  const std::string ref = RefId(container_id, ifname);
  return Commit([&](netfilter::TableReader& reader) -> Result<std::optional<netfilter::NftBatch>> {
    NG_ASSIGN_OR_RETURN(auto rules, OurPreroutingRules(reader, ref));
    netfilter::NftBatch batch(kNfprotoBridge, kTable);
    NG_RETURN_IF_ERROR(QueueRemoval(reader, batch, rules, {ref}));
    return std::optional<netfilter::NftBatch>(std::move(batch));
  });
}

Status CheckSpoofCheck(const SpoofCheck& check) {
  const std::string ref = RefId(check.container_id, check.ifname);
  NG_ASSIGN_OR_RETURN(auto reader, netfilter::TableReader::Open(kNfprotoBridge, kTable));
  auto missing = [](const std::string& what) {
    return Error(kErrCheckFailed, "macspoofchk: " + what);
  };
  NG_ASSIGN_OR_RETURN(auto rules, OurPreroutingRules(reader, ref));
  const auto want = PreroutingRule(check.host_veth, ref);
  bool found = false;
  for (const auto& r : rules) {
    auto decoded = netfilter::DecodeExpressions(r.expressions);
    found = found || (decoded && *decoded == want);
  }
  if (!found) return missing("no rule in bridge nat PREROUTING for " + check.host_veth);
  NG_ASSIGN_OR_RETURN(auto mac_rules, reader.Rules(MacChain(ref)));
  NG_ASSIGN_OR_RETURN(std::vector<Expr> mac_rule, MacRule(check.container_mac));
  if (mac_rules.size() != 2 || netfilter::DecodeExpressions(mac_rules[0].expressions) != mac_rule) {
    return missing("chain " + MacChain(ref) + " does not allow exactly " + check.container_mac);
  }
  return OkStatus();
}

Status GcSpoofCheck() {
  NG_ASSIGN_OR_RETURN(const bool exists, netfilter::HasTable(kNfprotoBridge, kTable));
  if (!exists) return OkStatus();
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  return Commit([&](netfilter::TableReader& reader) -> Result<std::optional<netfilter::NftBatch>> {
    NG_ASSIGN_OR_RETURN(auto rules, OurPreroutingRules(reader, ""));
    std::vector<netfilter::RuleRecord> stale;
    std::vector<std::string> refs;
    for (auto& r : rules) {
      auto decoded = netfilter::DecodeExpressions(r.expressions);
      if (!decoded || decoded->size() != 3) continue;
      const auto* cmp = std::get_if<e::Cmp>(&(*decoded)[1]);
      const auto* jump = std::get_if<e::Verdict>(&(*decoded)[2]);
      if (cmp == nullptr || jump == nullptr) continue;
      const std::string veth(
          reinterpret_cast<const char*>(cmp->data.data()),
          strnlen(reinterpret_cast<const char*>(cmp->data.data()), cmp->data.size()));
      NG_ASSIGN_OR_RETURN(auto link, netlink::GetLinkByName(sock, veth));
      if (link) continue;
      const std::string comment = netfilter::UserDataComment(r.userdata);
      cni::LogInfo("GC: removing macspoofchk chains of {} (host veth {} is gone)", comment, veth);
      refs.push_back(comment.substr(std::strlen(kCommentPrefix)));
      stale.push_back(std::move(r));
    }
    netfilter::NftBatch batch(kNfprotoBridge, kTable);
    NG_RETURN_IF_ERROR(QueueRemoval(reader, batch, stale, refs));
    return std::optional<netfilter::NftBatch>(std::move(batch));
  });
}

}  // namespace nodegate::bridge
