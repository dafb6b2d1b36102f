#pragma once
// etcd's v3 key-value API as values: range, put, delete and the transaction that combines
// them under compares (api/etcdserverpb/rpc.proto), and the Kv interface every user of the
// datastore programs against. The real implementation is etcd::Client (client.h, the JSON
// gateway over HTTP/1.1 and TLS); unit tests use a fake with the same semantics.
//
//   TxnRequest txn;
//   txn.compare.push_back(Compare::ModRevision(key, read_revision));  // unchanged since read
//   txn.success.push_back(PutRequest{key, new_value});
//   txn.failure.push_back(RangeRequest{.key = key});                   // what changed it
//   NG_ASSIGN_OR_RETURN(TxnResponse response, kv.Txn(txn));
//
// Keys and values are bytes (std::string); revisions are etcd's int64 counters.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::etcd {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;  // number of writes since creation; 0: the key does not exist
  bool operator==(const KeyValue&) const = default;
};

// One condition of a transaction: the key's version, create or mod revision, or value,
// compared with a constant. A key that does not exist has version, create and mod revision 0.
struct Compare {
  enum class Target { kVersion, kCreate, kMod, kValue };
  enum class Op { kEqual, kGreater, kLess, kNotEqual };
  std::string key;
  Target target = Target::kMod;
  Op op = Op::kEqual;
  int64_t number = 0;  // kVersion, kCreate, kMod
  std::string value;   // kValue

  // The key does not exist (create-if-absent).
  static Compare Absent(std::string key) {
    return {std::move(key), Target::kCreate, Op::kEqual, 0, {}};
  }
  // The key was last written at `revision` (0: it does not exist): update-if-unchanged.
  static Compare ModRevision(std::string key, int64_t revision) {
    return {std::move(key), Target::kMod, Op::kEqual, revision, {}};
  }
  bool operator==(const Compare&) const = default;
};

struct RangeRequest {
  std::string key;
  std::string range_end;  // empty: the key alone; PrefixEnd(key): every key under the prefix
  int64_t limit = 0;      // 0: no limit
  bool keys_only = false;
  bool count_only = false;
  // Answered by the member from its own state without asking the leader: cheaper, possibly a
  // little behind. Only for reads whose result a later compare re-checks.
  bool serializable = false;
  // Read the store as it was at this revision (0: now), for a consistent read in pages.
  int64_t revision = 0;
  bool operator==(const RangeRequest&) const = default;
};

struct PutRequest {
  std::string key;
  std::string value;
  bool operator==(const PutRequest&) const = default;
};

struct DeleteRequest {
  std::string key;
  std::string range_end;
  bool operator==(const DeleteRequest&) const = default;
};

using Op = std::variant<RangeRequest, PutRequest, DeleteRequest>;

struct RangeResponse {
  std::vector<KeyValue> kvs;
  int64_t count = 0;  // keys in the range (kvs may hold fewer under a limit)
  bool more = false;
  int64_t revision = 0;  // the store's revision the read saw
};

struct PutResponse {
  int64_t revision = 0;
};

struct DeleteResponse {
  int64_t deleted = 0;
  int64_t revision = 0;
};

using OpResponse = std::variant<RangeResponse, PutResponse, DeleteResponse>;

struct TxnRequest {
  std::vector<Compare> compare;
  std::vector<Op> success;
  std::vector<Op> failure;
};

struct TxnResponse {
  bool succeeded = false;
  int64_t revision = 0;
  // One per op of the branch that ran, in order.
  std::vector<OpResponse> responses;

  // The i-th response as a range (nullptr when it is not one).
  const RangeResponse* RangeAt(size_t i) const {
    return i < responses.size() ? std::get_if<RangeResponse>(&responses[i]) : nullptr;
  }
};

// The end of the range of every key that starts with `prefix`: the prefix with its last byte
// below 0xff incremented and what follows dropped; "\0" (every key) when there is none.
std::string PrefixEnd(std::string_view prefix);

// The datastore as its users see it. Errors carry CNI codes: 11 (try again later) when no
// endpoint answered in time, 7 for a request or configuration etcd refuses, 5 for local I/O.
class Kv {
 public:
  virtual ~Kv() = default;
  virtual Result<RangeResponse> Range(const RangeRequest& request) = 0;
  virtual Result<TxnResponse> Txn(const TxnRequest& request) = 0;
};

// etcd refuses a transaction with more operations than this (--max-txn-ops, default 128).
inline constexpr size_t kMaxTxnOps = 128;

}  // namespace nodegate::etcd
