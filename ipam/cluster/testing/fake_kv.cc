#include "ipam/cluster/testing/fake_kv.h"

namespace nodegate::ipam::cluster::testing {

namespace {

bool InRange(const std::string& key, const std::string& start, const std::string& end) {
  if (end.empty()) return key == start;
  if (end == std::string(1, '\0')) return key >= start;
  return key >= start && key < end;
}

}  // namespace

etcd::RangeResponse FakeKv::RangeLocked(const etcd::RangeRequest& request) const {
  etcd::RangeResponse out;
  out.revision = revision_;
  for (auto it = data_.lower_bound(request.key); it != data_.end(); ++it) {
    if (!InRange(it->first, request.key, request.range_end)) {
      if (request.range_end.empty() || it->first >= request.range_end) break;
      continue;
    }
    ++out.count;
    if (request.count_only) continue;
    if (request.limit > 0 && static_cast<int64_t>(out.kvs.size()) >= request.limit) {
      out.more = true;
      continue;
    }
    etcd::KeyValue kv = it->second;
    if (request.keys_only) kv.value.clear();
    out.kvs.push_back(std::move(kv));
  }
  return out;
}

bool FakeKv::CompareLocked(const etcd::Compare& c) const {
  const auto it = data_.find(c.key);
  const etcd::KeyValue missing;
  const etcd::KeyValue& kv = it == data_.end() ? missing : it->second;
  if (c.target == etcd::Compare::Target::kValue) {
    const int cmp = kv.value.compare(c.value);
    switch (c.op) {
      case etcd::Compare::Op::kEqual:
        return it != data_.end() && cmp == 0;
      case etcd::Compare::Op::kNotEqual:
        return it == data_.end() || cmp != 0;
      case etcd::Compare::Op::kGreater:
        return cmp > 0;
      case etcd::Compare::Op::kLess:
        return cmp < 0;
    }
  }
  const int64_t actual = c.target == etcd::Compare::Target::kVersion  ? kv.version
                         : c.target == etcd::Compare::Target::kCreate ? kv.create_revision
                                                                      : kv.mod_revision;
  switch (c.op) {
    case etcd::Compare::Op::kEqual:
      return actual == c.number;
    case etcd::Compare::Op::kNotEqual:
      return actual != c.number;
    case etcd::Compare::Op::kGreater:
      return actual > c.number;
    case etcd::Compare::Op::kLess:
      return actual < c.number;
  }
  return false;
}

Result<etcd::RangeResponse> FakeKv::Range(const etcd::RangeRequest& request) {
  std::lock_guard lock(mu_);
  if (fail_next > 0) {
    --fail_next;
    return Error(kErrTryAgainLater, "etcd: no endpoint answered (fake)");
  }
  return RangeLocked(request);
}

Result<etcd::TxnResponse> FakeKv::Txn(const etcd::TxnRequest& request) {
  std::function<void()> hook;
  {
    std::lock_guard lock(mu_);
    if (fail_next > 0) {
      --fail_next;
      return Error(kErrTryAgainLater, "etcd: no endpoint answered (fake)");
    }
    if (!request.compare.empty()) {
      ++transactions;
      hook = std::exchange(before_txn, nullptr);
    }
  }
  if (hook) hook();
  std::lock_guard lock(mu_);
  etcd::TxnResponse out;
  out.succeeded = true;
  for (const auto& c : request.compare) out.succeeded = out.succeeded && CompareLocked(c);
  const auto& ops = out.succeeded ? request.success : request.failure;
  bool writes = false;
  for (const auto& op : ops) {
    writes = writes || !std::holds_alternative<etcd::RangeRequest>(op);
  }
  const int64_t rev = writes ? revision_ + 1 : revision_;
  for (const auto& op : ops) {
    if (const auto* range = std::get_if<etcd::RangeRequest>(&op)) {
      out.responses.emplace_back(RangeLocked(*range));
    } else if (const auto* put = std::get_if<etcd::PutRequest>(&op)) {
      etcd::KeyValue& kv = data_[put->key];
      if (kv.version == 0) kv.create_revision = rev;
      kv.key = put->key;
      kv.value = put->value;
      kv.mod_revision = rev;
      ++kv.version;
      out.responses.emplace_back(etcd::PutResponse{rev});
    } else {
      const auto& del = std::get<etcd::DeleteRequest>(op);
      etcd::DeleteResponse d{0, rev};
      for (auto it = data_.lower_bound(del.key); it != data_.end();) {
        if (InRange(it->first, del.key, del.range_end)) {
          it = data_.erase(it);
          ++d.deleted;
        } else if (del.range_end.empty() || it->first >= del.range_end) {
          break;
        } else {
          ++it;
        }
      }
      out.responses.emplace_back(d);
    }
  }
  revision_ = rev;
  out.revision = revision_;
  return out;
}

void FakeKv::Put(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  etcd::KeyValue& kv = data_[key];
  ++revision_;
  if (kv.version == 0) kv.create_revision = revision_;
  kv.key = key;
  kv.value = value;
  kv.mod_revision = revision_;
  ++kv.version;
}

std::optional<etcd::KeyValue> FakeKv::Get(const std::string& key) const {
  std::lock_guard lock(mu_);
  const auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, etcd::KeyValue> FakeKv::Dump() const {
  std::lock_guard lock(mu_);
  return data_;
}

int64_t FakeKv::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

}  // namespace nodegate::ipam::cluster::testing
