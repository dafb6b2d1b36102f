// A rule as an nf_tables dump carries it (its NFTA_RULE_EXPRESSIONS), which any other writer of
// the namespace shapes: the full decoder and the readers that look at a rule in place (verdict,
// comment, multiport ports, the listing's filters) must survive any bytes, and the in-place
// readers must agree with the decoder wherever it reads the rule. First byte: the family (odd:
// IPv6); the rest: the expressions.

#include <set>
#include <variant>

#include "plugins/portmap/installed_mappings.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

using portmap::PortKey;
using portmap::Protocol;

const portmap::ipt::MultiportMatch* MultiportOf(const portmap::ipt::Rule& rule) {
  for (const auto& match : rule.matches) {
    if (const auto* m = std::get_if<portmap::ipt::MultiportMatch>(&match)) return m;
  }
  return nullptr;
}

const portmap::ipt::CommentMatch* CommentOf(const portmap::ipt::Rule& rule) {
  for (const auto& match : rule.matches) {
    if (const auto* m = std::get_if<portmap::ipt::CommentMatch>(&match)) return m;
  }
  return nullptr;
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(nft_rule_dump) {
  using namespace nodegate;
  if (data.empty()) return;
  const net::Family family = (data[0] & 1) != 0 ? net::Family::kV6 : net::Family::kV4;
  const auto* first = reinterpret_cast<const uint8_t*>(data.data()) + 1;
  const std::span<const uint8_t> expressions(first, data.size() - 1);

  const auto ports = portmap::ipt::NftRuleMultiportPorts(expressions);
  const auto comment = portmap::ipt::NftRuleComment(expressions);
  (void)portmap::ipt::NftRuleVerdict(expressions);
  (void)portmap::RawRuleMayBeDnat(expressions);
  const auto rule = portmap::ipt::DecodeNftRule(expressions, family);
  if (!rule) return;

  // Where the decoder reads a multiport match, the in-place reader reads the same ports.
  if (const auto* multiport = fuzz::MultiportOf(*rule)) {
    NG_FUZZ_CHECK(ports.has_value() && ports->count == multiport->dports.size());
    for (size_t i = 0; i < ports->count; ++i) {
      NG_FUZZ_CHECK(ports->ports[i] == multiport->dports[i]);
    }
  }
  if (const auto* c = fuzz::CommentOf(*rule)) NG_FUZZ_CHECK(comment == c->text);

  // The listing's filter before decoding never drops a rule the decoded filter keeps.
  std::set<PortKey> keys;
  for (const auto protocol : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
    keys.insert({family, protocol, 80});
    if (ports && ports->count > 0) keys.insert({family, protocol, ports->ports[0]});
  }
  for (const auto& key : keys) {
    const std::set<PortKey> one = {key};
    if (portmap::EntryRuleMayMatch(*rule, family, one)) {
      NG_FUZZ_CHECK(portmap::RawEntryMayMatch(expressions, family, one));
    }
  }
}
