#pragma once
// etcd's key-value semantics in memory, for the unit tests of cluster-ipam's logic: one
// revision counter for the store, bumped once by every transaction that writes; create and
// mod revisions and versions per key; ranges by key, prefix (range_end) or from a key ("\0");
// compares on version, create and mod revision and value (0 and "" for a missing key);
// transactions applied atomically under one lock. The process tests run the real etcd.
//
//   FakeKv kv;
//   kv.before_txn = [&] { ... another writer's transaction ... };  // a race, on cue
//   kv.fail_next = 2;                                               // two unreachable calls

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "lib/etcd/kv.h"

namespace nodegate::ipam::cluster::testing {

class FakeKv : public etcd::Kv {
 public:
  Result<etcd::RangeResponse> Range(const etcd::RangeRequest& request) override;
  Result<etcd::TxnResponse> Txn(const etcd::TxnRequest& request) override;

  // Direct access, without hooks or failures.
  void Put(const std::string& key, const std::string& value);
  std::optional<etcd::KeyValue> Get(const std::string& key) const;
  std::map<std::string, etcd::KeyValue> Dump() const;
  int64_t revision() const;

  // Runs (once per call) before each transaction that has compares: another writer's turn.
  std::function<void()> before_txn;
  // The next calls fail as an unreachable cluster does (code 11).
  int fail_next = 0;
  int transactions = 0;  // Txn calls that had compares

 private:
  etcd::RangeResponse RangeLocked(const etcd::RangeRequest& request) const;
  bool CompareLocked(const etcd::Compare& compare) const;

  mutable std::recursive_mutex mu_;
  std::map<std::string, etcd::KeyValue> data_;
  int64_t revision_ = 1;
};

}  // namespace nodegate::ipam::cluster::testing
