#pragma once
// Read-only nf_tables queries straight over netlink: one request each, reading one object (a
// table, chain, set, element, or a chain's rules), never the whole ruleset (`nft get element`
// dumps the whole set first, and nft 1.0 fetches every element of a table for any listing). A
// read also replaces the dry-run transaction, whose refusal costs an RCU grace period in the
// kernel's abort path, under the commit mutex every other nf_tables writer of the namespace needs.
//
//   NG_ASSIGN_OR_RETURN(bool present, netfilter::HasElement(
//       {.family = NFPROTO_INET, .table = "cni_hostport", .set = "owned"},
//       netfilter::IfnameKey({"3553464f01e30f3", "all4"})));

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::netfilter {

// NFPROTO_INET, _IPV4 and _IPV6, for users that cannot include linux/netfilter.h next to
// netinet/in.h.
inline constexpr uint8_t kNfprotoInet = 1;
inline constexpr uint8_t kNfprotoIpv4 = 2;
inline constexpr uint8_t kNfprotoIpv6 = 10;

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

struct TableRef {
  uint8_t family = 0;
  std::string table;
};
// HasTable for each of `tables`, in order, over one socket.
Result<std::vector<bool>> HasTables(const std::vector<TableRef>& tables);

// One element of a set or map as the kernel holds it: key and data in register layout (a
// concatenation's fields each padded to 4 bytes; addresses and ports in network byte order)
// and the comment nft gave it.
struct SetElement {
  std::vector<uint8_t> key;
  std::vector<uint8_t> key_end;  // a concatenation of ranges: the last key of the range
  std::vector<uint8_t> data;     // empty for a set
  std::string comment;
  uint32_t flags = 0;  // NFT_SET_ELEM_INTERVAL_END...
};

// A set or map as GETSET describes it.
struct SetInfo {
  uint32_t flags = 0;  // NFT_SET_*
  uint32_t key_type = 0, key_len = 0;
  uint32_t data_type = 0, data_len = 0;
};

// One rule as a dump holds it.
struct RuleRecord {
  std::string chain;
  uint64_t handle = 0;
  std::vector<uint8_t> expressions;  // NFTA_RULE_EXPRESSIONS payload (nft_expr.h decodes it)
  std::vector<uint8_t> userdata;     // NFTA_RULE_USERDATA (UserDataComment reads a comment)
};

// Reads of one table over one nfnetlink socket, for callers that ask several things: each
// read is one request, and costs what its answer holds (an element by its key costs the same
// in a map of five or of five thousand).
//
//   NG_ASSIGN_OR_RETURN(auto reader, netfilter::TableReader::Open(kNfprotoInet, "cni_hostport"));
//   NG_ASSIGN_OR_RETURN(auto names, reader.SetNames());
//   NG_ASSIGN_OR_RETURN(auto element, reader.Element(names[0], key));
class TableReader {
 public:
  static Result<TableReader> Open(uint8_t family, std::string table);
  TableReader(TableReader&&) noexcept;
  TableReader& operator=(TableReader&&) noexcept;
  ~TableReader();

  // The ruleset's generation (NFT_MSG_GETGEN): a batch committed with it (NftBatch::Commit) is
  // refused when anything changed since, so reads made after this one stay true for it.
  Result<uint32_t> Generation();
  // The names of the table's sets and maps; empty when the table does not exist.
  Result<std::vector<std::string>> SetNames();
  // The element of `set` whose key is exactly `key`; nullopt when there is none, or no such
  // set or table.
  Result<std::optional<SetElement>> Element(const std::string& set,
                                            const std::vector<uint8_t>& key);
  // Every element of `set`; empty when it or the table does not exist.
  Result<std::vector<SetElement>> Elements(const std::string& set);
  // The comment of `chain`: nullopt when the chain (or table) does not exist, "" when it has
  // none.
  Result<std::optional<std::string>> ChainComment(const std::string& chain);
  // The set or map `set`; nullopt when it (or the table) does not exist.
  Result<std::optional<SetInfo>> Set(const std::string& set);
  // The rules of `chain` in order (of every chain of the table when ""); empty when it or the
  // table does not exist.
  Result<std::vector<RuleRecord>> Rules(const std::string& chain);

 private:
  struct Connection;
  TableReader(uint8_t family, std::string table, std::unique_ptr<Connection> connection);
  uint8_t family_;
  std::string table_;
  std::unique_ptr<Connection> connection_;
};

// The comment in the user data nft attaches to a rule, chain or element (type-length-value
// records; the comment is record 0, NUL-terminated). "" when there is none.
std::string UserDataComment(std::span<const uint8_t> user_data);

// nf_tables answers (NFT_MSG_GETGEN) in this network namespace. Errors: code 100 naming the
// kernel's reason (no nf_tables, no permission).
Status ProbeNfTables();

}  // namespace nodegate::netfilter
