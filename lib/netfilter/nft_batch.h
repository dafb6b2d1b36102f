#pragma once
// One nf_tables transaction built as data and sent as one netlink batch, without libnftables:
// tables, sets and maps, chains, rules (nft_expr.h) and set elements, each message written as
// nft 1.0 writes it (attribute order, user data nft reads back to print the object), so
// `nft list ruleset` shows the result as if nft had written it. The kernel applies the whole
// batch or none of it; a refusal names each change it refused.
//
//   NftBatch batch(kNfprotoInet, "cni_hostport");
//   batch.AddTable({.comment = "..."});
//   const size_t set = batch.AddSet({.name = "owned", .key_type = ..., .key_len = 32});
//   batch.AddRule({.chain = "prerouting", .exprs = {...}});
//   batch.ChangeElements({ElementVerb::kCreate, "owned", {{.key = IfnameKey({owner, "all4"})}}});
//   NG_ASSIGN_OR_RETURN(std::vector<BatchRefusal> refused, batch.Commit());
//   if (!refused.empty()) ... nothing was applied; refused[i].change indexes the changes above
//
// A refused batch costs the kernel's abort, which waits for an RCU grace period under the
// commit mutex: callers expecting a refusal should read first.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/netfilter/message_chunks.h"
#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nft_expr.h"

namespace nodegate::netfilter {

// nft's user data: records of one byte type, one byte length, the value (libnftnl's udata).
class UserData {
 public:
  // A 32-bit value in host byte order (nftnl_udata_put_u32).
  UserData& PutU32(uint8_t type, uint32_t value);
  // Text with its NUL (nftnl_udata_put_strz); cut to fit the one-byte length.
  UserData& PutString(uint8_t type, const std::string& text);
  // A record holding records: Begin returns what End closes.
  size_t BeginNest(uint8_t type);
  void EndNest(size_t start);
  const Bytes& bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }

 private:
  Bytes bytes_;
};

// The user data of a comment on a table, chain, rule or set element: record 0, the text and
// its NUL (nft limits comments to 128 bytes).
Bytes CommentUserData(const std::string& comment);

struct NftTable {
  std::string comment;
};

struct NftSet {
  std::string name;    // "__set%d" for an anonymous set (the kernel numbers it)
  uint32_t id = 0;     // NFTA_SET_ID, unique in the batch; rules and elements of the same
                       // batch may refer to the set by it (required for anonymous sets)
  uint32_t flags = 0;  // NFT_SET_*
  uint32_t key_type = 0, key_len = 0;
  uint32_t data_type = 0, data_len = 0;  // maps (NFT_SET_MAP)
  std::vector<uint32_t> field_lens;      // NFTA_SET_DESC_CONCAT: a concatenation of ranges
  uint32_t size = 0;                     // NFTA_SET_DESC_SIZE (nft gives it constant sets)
  Bytes userdata;
};

struct NftHook {
  uint32_t num = 0;  // NF_INET_*
  int32_t priority = 0;
  std::string type;     // "nat", "filter"
  uint32_t policy = 1;  // NF_ACCEPT
};

struct NftChain {
  std::string name;
  std::optional<NftHook> hook;  // a base chain
  std::string comment;
};

struct NftRule {
  std::string chain;
  std::vector<Expr> exprs;
  std::string comment;
};

struct ElementWrite {
  Bytes key;
  Bytes key_end;        // a concatenation of ranges: the last key of the element's range
  Bytes data;           // maps only
  std::string comment;  // "" for none
  // An interval set's range ends with an element flagged NFT_SET_ELEM_INTERVAL_END whose key
  // is the first value after the range.
  bool interval_end = false;
  bool operator==(const ElementWrite&) const = default;
};

enum class ElementVerb {
  kAdd,     // adding an element that is there with the same data is no error
  kCreate,  // refused (EEXIST) when the key is there
  kDelete,  // refused (ENOENT) when the key is not there
};

struct ElementChange {
  ElementVerb verb = ElementVerb::kAdd;
  std::string set;
  std::vector<ElementWrite> elements;
  uint32_t set_id = 0;  // a set created in the same batch under a kernel-chosen name
  bool operator==(const ElementChange&) const = default;
};

// The kernel's refusal of one change of a batch.
struct BatchRefusal {
  size_t change = 0;  // index of the change (the value its Add/Change call returned)
  int error = 0;      // errno
  std::string ext_ack;
};

class NftBatch {
 public:
  // Changes to `table` of `family` (kNfprotoInet, NFPROTO_IPV4...).
  NftBatch(uint8_t family, std::string table);

  // Each returns the index refusals name it by.
  size_t AddTable(const NftTable& table);
  size_t AddSet(const NftSet& set);
  size_t DeleteSet(const std::string& name);
  size_t AddChain(const NftChain& chain);
  size_t FlushChain(const std::string& chain);
  size_t DeleteChain(const std::string& chain);
  size_t AddRule(const NftRule& rule);
  // A rule of any table of the namespace, by handle.
  size_t DeleteRule(uint8_t family, const std::string& table, const std::string& chain,
                    uint64_t handle);
  // A change of many elements goes as several messages (a nested attribute's length is 16
  // bits), all of them this one index.
  size_t ChangeElements(const ElementChange& change);

  size_t changes() const { return changes_; }
  bool empty() const { return changes_ == 0; }

  // Sends the batch over a new socket. With `generation`, the kernel refuses the whole batch
  // (ERESTART, IsStaleGeneration in nfnl.h) when the ruleset changed since that generation was
  // read. Empty when applied; else every change the kernel refused, in order, and none applied.
  // Errors (code 100): no socket, the batch itself refused, or the exchange broke off (whether
  // it applied is then unknown).
  Result<std::vector<BatchRefusal>> Commit(std::optional<uint32_t> generation = {}) const;

  // For a kernel in memory (lib/netfilter/testing/fake_ruleset.h), which reads what Commit
  // would send: the messages, back to back in chunks (a message never spans two), and the
  // refusals its answers mean (Commit's own reading of the kernel's). Errors (code 100): a
  // message was not answered.
  std::vector<ByteView> MessageViews() const { return messages_.Views(); }
  Result<std::vector<BatchRefusal>> RefusalsOf(const std::vector<BatchAnswer>& answers) const;

 private:
  void Queue(uint8_t family, uint16_t type, uint16_t flags, const AttrWriter& attrs, size_t change);
  size_t Next() { return changes_++; }
  // One change of one message of this batch's family: its index.
  size_t Enqueue(int msg, uint16_t flags, const AttrWriter& attrs);
  // A change naming only the table (`table_attr`) and one object of it (`name_attr`).
  size_t EnqueueNamed(int msg, uint16_t flags, uint16_t table_attr, uint16_t name_attr,
                      const std::string& name);

  uint8_t family_;
  std::string table_;
  size_t changes_ = 0;
  MessageChunks messages_;
  std::vector<size_t> change_of_;  // per message
};

}  // namespace nodegate::netfilter
