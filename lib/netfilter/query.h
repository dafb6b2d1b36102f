#pragma once
// Read-only nf_tables queries straight over netlink, for the hot paths where libnftables has no
// cheap way: `nft get element` dumps the whole set first, and a dry-run transaction that fails
// costs an RCU grace period in the kernel's abort path, under the commit mutex every other
// nf_tables writer of the namespace needs. Each query here is one request whose cost does not
// depend on the ruleset's size.
//
//   NG_ASSIGN_OR_RETURN(bool present, netfilter::HasElement(
//       {.family = NFPROTO_INET, .table = "cni_hostport", .set = "owned"},
//       netfilter::IfnameKey({"3553464f01e30f3", "all4"})));

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::netfilter {

// NFPROTO_INET, for users that cannot include linux/netfilter.h next to netinet/in.h.
inline constexpr uint8_t kNfprotoInet = 1;

struct SetRef {
  uint8_t family = 0;  // kNfprotoInet, NFPROTO_IPV4...
  std::string table;
  std::string set;
};

// The key bytes of a concatenation of `ifname` fields (each IFNAMSIZ bytes, zero padded).
std::vector<uint8_t> IfnameKey(const std::vector<std::string>& fields);

// True when `set` holds an element with exactly `key`; false when it does not, or when the
// table or set does not exist. Errors: code 100 for other kernel failures.
Result<bool> HasElement(const SetRef& set, const std::vector<uint8_t>& key);

// True when nf_tables `family` `table` has a chain named `chain`; false when it has none or the
// table does not exist. One NFT_MSG_GETCHAIN request. Errors: code 100.
Result<bool> HasChain(uint8_t family, const std::string& table, const std::string& chain);

// True when nf_tables `family` has a table named `table`. One NFT_MSG_GETTABLE request.
// Errors: code 100.
Result<bool> HasTable(uint8_t family, const std::string& table);

// nf_tables answers (NFT_MSG_GETGEN) in this network namespace. Errors: code 100 naming the
// kernel's reason (no nf_tables, no permission).
Status ProbeNfTables();

}  // namespace nodegate::netfilter
