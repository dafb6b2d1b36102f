#pragma once
// ipt_entry / ip6t_entry blobs for libiptc, laid out exactly as the iptables 1.8 binaries lay
// out the same rule (same match and target revisions, zeroed padding). That makes our rules
// byte-identical to the reference's, so existence checks work on either's rules and
// `iptables-legacy-save` prints both the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/net/ip.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::ipt {

// The whole entry (header, matches, target) for `family`.
std::vector<uint8_t> EncodeRule(const Rule& rule, net::Family family);

// Size of the family's entry header (sizeof(ipt_entry) or sizeof(ip6t_entry)).
size_t EntryHeaderSize(net::Family family);

// The target name libiptc reports for the rule: the chain for jumps, else "MARK", "DNAT"...
std::string TargetName(const Rule& rule);

// True when `existing` (from libiptc) is the same rule as `wanted` (our encoding): same
// header, same matches byte for byte, same target name and target data. Counters and kernel
// bookkeeping are ignored.
bool SameRule(const uint8_t* existing, const std::string& existing_target,
              const std::vector<uint8_t>& wanted, const std::string& wanted_target,
              net::Family family);

// The text of the first comment match of an entry, or "" when it has none.
std::string EntryCommentText(const uint8_t* entry, net::Family family);

// What listing the installed mappings reads from an entry (libiptc's `target` name given):
// -d and -p of the header, the comment, tcp/udp/sctp --dport and multiport matches, and a
// DNAT target (revisions 0-2) or a jump. Other matches are left out, so the result is for
// reading only, never for comparing; nullopt for an entry too short to hold what it claims.
std::optional<Rule> DecodeEntryForListing(const uint8_t* entry, const std::string& target,
                                          net::Family family);

}  // namespace nodegate::portmap::ipt
