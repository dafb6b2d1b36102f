// conditionsV4/V6 in nft syntax, as a config's author writes them: portmap compiles them into
// nf_tables expressions (plugins/portmap/nftables/conditions.h) instead of pasting them into a
// rule. Any tokens compile or are refused with code 7; what compiles must encode and decode
// back to the same expressions, compile the same from the matches' own text, carry well-formed set
// elements, and build the network's rules. Input: one token per line; the first byte picks the
// family (odd: IPv6).

#include <string>
#include <vector>

#include "lib/netfilter/nft_expr.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/nftables/conditions.h"
#include "plugins/portmap/nftables/rules.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(nft_conditions) {
  using namespace nodegate;
  if (data.empty()) return;
  const net::Family family = (data[0] & 1) != 0 ? net::Family::kV6 : net::Family::kV4;
  std::vector<std::string> tokens;
  std::string token;
  for (const char c : data.substr(1)) {
    if (c == '\n') {
      tokens.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  if (!token.empty()) tokens.push_back(token);

  const auto parsed = portmap::ParseNftConditions(tokens, family);
  if (!parsed.ok()) {
    NG_FUZZ_CHECK(parsed.error().code == kErrInvalidConfig);
    fuzz::CheckErrorPrints(parsed.error());
    return;
  }
  // The matches' own texts, joined, are the same conditions.
  std::string again;
  for (const auto& m : parsed->matches) again += (again.empty() ? "" : " ") + m.text;
  const auto reparsed = portmap::ParseNftConditions({again}, family);
  NG_FUZZ_CHECK(reparsed.ok() && reparsed->matches.size() == parsed->matches.size());
  for (size_t i = 0; i < parsed->matches.size(); ++i) {
    NG_FUZZ_CHECK(reparsed->matches[i].exprs == parsed->matches[i].exprs);
    NG_FUZZ_CHECK(reparsed->matches[i].set == parsed->matches[i].set);
  }
  for (const auto& m : parsed->matches) {
    NG_FUZZ_CHECK(!m.exprs.empty());
    NG_FUZZ_CHECK(!m.family || *m.family == family);
    const auto back = netfilter::DecodeExpressions(netfilter::EncodeExpressions(m.exprs));
    NG_FUZZ_CHECK(back.has_value() && *back == m.exprs);
    if (!m.set) continue;
    NG_FUZZ_CHECK(!m.set->elements.empty());
    NG_FUZZ_CHECK(std::holds_alternative<netfilter::expr::Lookup>(m.exprs.back()));
    for (const auto& e : m.set->elements) NG_FUZZ_CHECK(e.key.size() == m.set->key_len);
    // An interval set's elements ascend, starts and ends alternating.
    for (size_t i = 1; i < m.set->elements.size() && (m.set->flags & 4) != 0; ++i) {
      NG_FUZZ_CHECK(m.set->elements[i - 1].key < m.set->elements[i].key);
      NG_FUZZ_CHECK(m.set->elements[i - 1].interval_end != m.set->elements[i].interval_end);
    }
  }
  // The network's rules build with them, each `{ ... }` as a set of its rule.
  portmap::Config config;
  config.network_name = "fuzz";
  config.container_id = "c";
  (family == net::Family::kV4 ? config.conditions_v4 : config.conditions_v6).parsed = *parsed;
  portmap::nft::Plan plan;
  portmap::nft::AppendSetup(config, {{24}, {64}}, plan);
  NG_FUZZ_CHECK(plan.ToBatch().changes() == plan.steps().size());
}
