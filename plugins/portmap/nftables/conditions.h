#pragma once
// conditionsV4/V6 in nft syntax, compiled into nf_tables expressions (nothing is pasted into a
// rule any more: the backend writes rules over netlink). A documented subset of nft's match
// syntax, the one the reference documents (`["ip", "daddr", "!=", "192.0.2.0/24"]`) and what
// users put there to limit mappings by address, interface, protocol, port or mark:
//
//   ip saddr|daddr       (conditionsV4)   address, prefix, range a-b, or { set of those }
//   ip6 saddr|daddr      (conditionsV6)   the same for IPv6
//   ip protocol (V4), ip6 nexthdr (V6), meta l4proto       tcp, udp, sctp, ... or a number; { set }
//   [meta] iifname|oifname                name, "name", wildcard eth*; { set of names }
//   th|tcp|udp|sctp sport|dport           port, range a-b, { set }; also < > <= >=
//   [meta] mark [& MASK|and MASK]         value; { set }
//
// each with an optional relation (==, !=, eq, ne; < > <= >= lt gt le ge for ports), matches
// one after another (all must hold). Anything else (ct, fib, verdicts, counters, another
// family's header...) is refused with code 7 naming the construct. Each match is encoded as
// nft 1.0 encodes the same text, so `nft list ruleset` prints it back as written.
//
//   NG_ASSIGN_OR_RETURN(NftConditions c, ParseNftConditions({"ip", "daddr", "!=", "192.0.2.0/24"},
//                                                           net::Family::kV4));

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/nft_expr.h"

namespace nodegate::portmap {

// The values of a `{ ... }` in a match: an anonymous constant set created with the rule.
struct AnonymousSet {
  uint32_t flags = 0;  // NFT_SET_ANONYMOUS | NFT_SET_CONSTANT [| NFT_SET_INTERVAL]
  uint32_t key_type = 0, key_len = 0;
  uint32_t key_byteorder = 0;  // nft's BYTEORDER_* of the key type, for its user data
  std::vector<netfilter::ElementWrite> elements;
  bool operator==(const AnonymousSet&) const = default;
};

// One match (`ip daddr != 192.0.2.0/24`) as expressions on register 1, and the protocol
// dependencies nft puts before it.
struct ConditionMatch {
  std::string text;                    // the match as written, for messages
  std::optional<net::Family> family;   // reads the network header: needs `meta nfproto`
  std::optional<uint8_t> needs_l4;     // reads a tcp/udp/sctp header: needs `meta l4proto`
  std::optional<uint8_t> gives_l4;     // establishes the transport protocol (== one protocol)
  std::vector<netfilter::Expr> exprs;  // a set lookup last, its set ID filled in per rule
  std::optional<AnonymousSet> set;
  bool operator==(const ConditionMatch&) const = default;
};

// A family's conditions: the tokens joined by spaces, and the matches in order.
struct NftConditions {
  std::string text;
  std::vector<ConditionMatch> matches;
  bool operator==(const NftConditions&) const = default;
};

// Parses and compiles one family's conditions. Errors: code 7 naming the construct (and the
// subset when the construct is not in it).
Result<NftConditions> ParseNftConditions(const std::vector<std::string>& tokens,
                                         net::Family family);

}  // namespace nodegate::portmap
