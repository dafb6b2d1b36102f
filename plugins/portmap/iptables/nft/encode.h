#pragma once
// The iptables layout's rules (../rules.h) in nf_tables, in the encoding every iptables-nft
// from 1.8.4 on decodes as it decodes its own rules (docs/iptables-nft-encoding.md), both
// ways, without sockets:
//
//   encode  an ipt::Rule into the NFTA_RULE_EXPRESSIONS and NFTA_RULE_COMPAT payloads of a
//           NEWRULE message, byte for byte what `iptables-nft -A` 1.8.4 sends for the same
//           rule: [-i] [-o] [-p] [-s] [-d] (addresses loaded whole, masked by a bitwise
//           unless the prefix is the whole address), every match as an xt `match` in order
//           (-m tcp/udp/mark too, which 1.8.8 and later write natively and 1.8.7 and older
//           cannot read back), counter, then an xt `target` or a jump verdict;
//   decode  a dumped rule (ours, any iptables-nft's from 1.8.4 to 1.8.9 and later, or one
//           nft wrote in the same shapes) back into an ipt::Rule, as iptables-nft's parser
//           reads it, or nullopt when it holds anything the layout does not use. Native and
//           xt forms of a match decode to the same Rule, so SameNftRule() on decoded rules
//           is `iptables -C`.
//
//   NG_ASSIGN_OR_RETURN(NftRuleEncoding enc, EncodeNftRule(rule, net::Family::kV4));
//   std::optional<Rule> existing = DecodeNftRule(dumped_expressions, net::Family::kV4);
//   if (existing && SameNftRule(*existing, rule)) ...

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/nlattr.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::ipt {

// The two rule attributes iptables-nft computes from a rule.
struct NftRuleEncoding {
  std::vector<uint8_t> expressions;  // payload of NFTA_RULE_EXPRESSIONS (NFTA_LIST_ELEMs)
  std::vector<uint8_t> compat;       // payload of NFTA_RULE_COMPAT {PROTO, FLAGS}
};

// Errors (code 7): what iptables-nft refuses too or cannot express: `! -s 0.0.0.0/0` (the
// kernel rejects its zero-length load), a port match whose protocol is not the rule's -p,
// an empty or >15-port multiport, ports outside 0..65535, a comment over 255 bytes, an
// interface name over 15 bytes, a DNAT address of the other family.
Result<NftRuleEncoding> EncodeNftRule(const Rule& rule, net::Family family);
// The same written in place: NFTA_RULE_EXPRESSIONS and NFTA_RULE_COMPAT appended to `out` (a
// NEWRULE message's attributes), with no buffer of its own. On an error `out` holds part of
// them: discard it.
Status AppendNftRuleAttrs(const Rule& rule, net::Family family, netfilter::AttrWriter& out);

// The rule a GETRULE reply holds: `expressions` is its NFTA_RULE_EXPRESSIONS payload,
// `userdata` its NFTA_RULE_USERDATA (a comment there becomes the last comment match, as
// iptables-nft reads it). nullopt for anything else: other expressions or registers, other
// match/target revisions or data, inverted protocol or mark, goto, several verdicts.
std::optional<Rule> DecodeNftRule(std::span<const uint8_t> expressions, net::Family family,
                                  std::span<const uint8_t> userdata = {});

// The form in which two rules are equal exactly when `iptables -C` says so: prefixes masked,
// `-s 0.0.0.0/0` and `-i +` (which match everything and encode to nothing) dropped, inversion
// flags of absent fields cleared.
Rule CanonicalRule(const Rule& rule);
inline bool SameNftRule(const Rule& a, const Rule& b) {
  return CanonicalRule(a) == CanonicalRule(b);
}

// What a dumped rule ends in, read without decoding the rest (cheap enough for every rule
// of a long chain): the chain of a jump or goto verdict, or the name of an xt target
// ("DNAT", "MARK", "MASQUERADE"...); both empty for anything else.
struct NftVerdict {
  std::string chain;
  std::string target;
  auto operator<=>(const NftVerdict&) const = default;
};
NftVerdict NftRuleVerdict(std::span<const uint8_t> expressions);

// The chain a dumped rule jumps or goes to, whatever else it holds (for deleting jumps to a
// chain, as the reference does by target name); nullopt for other verdicts and targets.
std::optional<std::string> NftJumpTarget(std::span<const uint8_t> expressions);

// The destination ports of a dumped rule's multiport match (xt_multiport_v1), read in place
// without decoding the rule; nullopt when it has none or one of another size.
struct MultiportPorts {
  std::array<uint16_t, 15> ports{};  // XT_MULTI_PORTS
  size_t count = 0;
  bool Contains(int port) const {
    return std::find(ports.begin(), ports.begin() + count, port) != ports.begin() + count;
  }
};
std::optional<MultiportPorts> NftRuleMultiportPorts(std::span<const uint8_t> expressions);

// The text of a dumped rule's first comment (xt comment match, else a userdata comment).
std::optional<std::string> NftRuleComment(std::span<const uint8_t> expressions,
                                          std::span<const uint8_t> userdata = {});

// One line per expression: its name, then each attribute as type=hex or type={...} for
// nested ones. Two rules with the same text are the same rule to the kernel (for tests and
// error messages; the kernel's dump order is kept).
std::string NftExpressionsToString(std::span<const uint8_t> expressions);

}  // namespace nodegate::portmap::ipt
