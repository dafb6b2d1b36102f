// The legacy writer of the iptables layout: table nat of one family through libiptc.
#include "plugins/portmap/iptables/legacy/table.h"

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cni/logging.h"
#include "lib/sys/file_lock.h"
#include "plugins/portmap/iptables/legacy/encode.h"
#include "plugins/portmap/iptables/legacy/ops.h"

namespace nodegate::portmap::ipt {
namespace {

// One snapshot of a legacy table nat; changes are buffered until Commit().
class LegacyNatTable final : public NatTable {
 public:
  static Result<std::unique_ptr<LegacyNatTable>> Open(const LegacyOps& ops) {
    xtc_handle* h = ops.init(kTable);
    if (h == nullptr) {
      const int err = errno;
      return Error(kErrKernel,
                   std::string(ops.name) + ": cannot read table nat: " + ops.strerror(err));
    }
    return std::unique_ptr<LegacyNatTable>(new LegacyNatTable(ops, h));
  }
  LegacyNatTable(const LegacyNatTable&) = delete;
  LegacyNatTable& operator=(const LegacyNatTable&) = delete;
  ~LegacyNatTable() override { ops_->free(h_); }

  net::Family family() const override { return ops_->family; }
  std::string name() const override { return ops_->name; }
  bool HasChain(const std::string& chain) override { return ops_->is_chain(chain.c_str(), h_); }

  Result<bool> HasRule(const std::string& chain, const Rule& rule) override {
    const auto wanted = EncodeRule(rule, ops_->family);
    const std::string wanted_target = TargetName(rule);
    for (const uint8_t* e = ops_->first_rule(chain.c_str(), h_); e != nullptr;
         e = ops_->next_rule(e, h_)) {
      const char* target = ops_->get_target(e, h_);
      if (SameRule(e, target ? target : "", wanted, wanted_target, ops_->family)) {
        return true;
      }
    }
    return false;
  }

  Status CreateChain(const std::string& chain) override {
    if (!ops_->create_chain(chain.c_str(), h_)) return Fail("create chain " + chain);
    return OkStatus();
  }

  Status Append(const std::string& chain, const Rule& rule) override {
    const auto blob = EncodeRule(rule, ops_->family);
    if (!ops_->append(chain.c_str(), blob.data(), h_)) {
      return Fail("append to " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  Status InsertFirst(const std::string& chain, const Rule& rule) override {
    const auto blob = EncodeRule(rule, ops_->family);
    if (!ops_->insert(chain.c_str(), blob.data(), 0, h_)) {
      return Fail("insert into " + chain + " rule \"" + rule.ToString() + "\"");
    }
    return OkStatus();
  }

  Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) override {
    if (!HasChain(chain)) return OkStatus();
    std::vector<unsigned int> doomed;
    unsigned int index = 0;
    for (const uint8_t* e = ops_->first_rule(chain.c_str(), h_); e != nullptr;
         e = ops_->next_rule(e, h_), ++index) {
      const char* target = ops_->get_target(e, h_);
      if (target != nullptr && targets.count(target) > 0) doomed.push_back(index);
    }
    for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
      if (!ops_->delete_num_entry(chain.c_str(), *it, h_)) {
        return Fail("delete rule " + std::to_string(*it + 1) + " of " + chain);
      }
    }
    return OkStatus();
  }

  Status Flush(const std::string& chain) override {
    if (!ops_->flush_entries(chain.c_str(), h_)) return Fail("flush chain " + chain);
    return OkStatus();
  }

  Status DeleteChain(const std::string& chain) override {
    if (!ops_->delete_chain(chain.c_str(), h_)) return Fail("delete chain " + chain);
    return OkStatus();
  }

  Result<std::map<std::string, CommentOwner>> EntryOwners() override {
    std::map<std::string, CommentOwner> out;
    if (!HasChain(kDnatChain)) return out;
    for (const uint8_t* e = ops_->first_rule(kDnatChain, h_); e != nullptr;
         e = ops_->next_rule(e, h_)) {
      const char* target = ops_->get_target(e, h_);
      if (target == nullptr || std::string_view(target).rfind("CNI-DN-", 0) != 0) continue;
      if (auto owner = ParseEntryComment(EntryCommentText(e, ops_->family))) {
        out[target] = *owner;
      }
    }
    return out;
  }

  Result<std::vector<std::pair<std::string, std::string>>> JumpComments(
      const std::string& parent, const std::string& prefix) override {
    std::vector<std::pair<std::string, std::string>> out;
    if (!HasChain(parent)) return out;
    for (const uint8_t* e = ops_->first_rule(parent.c_str(), h_); e != nullptr;
         e = ops_->next_rule(e, h_)) {
      const char* target = ops_->get_target(e, h_);
      if (target == nullptr || std::string_view(target).rfind(prefix, 0) != 0) continue;
      out.emplace_back(target, EntryCommentText(e, ops_->family));
    }
    return out;
  }

  Status Commit() {
    if (!ops_->commit(h_)) {
      commit_errno_ = errno;
      return Fail("commit table nat");
    }
    return OkStatus();
  }
  int commit_errno() const { return commit_errno_; }

 private:
  LegacyNatTable(const LegacyOps& ops, xtc_handle* h) : ops_(&ops), h_(h) {}
  Status Fail(const std::string& what) const {
    const int err = errno;
    return Error(kErrKernel, std::string(ops_->name) + ": " + what + ": " + ops_->strerror(err));
  }
  const LegacyOps* ops_;
  xtc_handle* h_;
  int commit_errno_ = 0;
};

}  // namespace

Status TransactLegacyWith(const LegacyOps& ops, const std::string& lock_path,
                          const NatTableChange& change) {
  NG_ASSIGN_OR_RETURN(auto lock, sys::FileLock::Acquire(lock_path));
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(auto table, LegacyNatTable::Open(ops));
    NG_ASSIGN_OR_RETURN(const bool changed, change(*table));
    if (!changed) return OkStatus();
    Status committed = table->Commit();
    if (committed.ok() || table->commit_errno() != EAGAIN || attempt == kLegacyCommitAttempts) {
      return committed;
    }
    cni::LogInfo("{}: table nat changed during commit, retrying", ops.name);
  }
}

Status TransactLegacy(net::Family family, const NatTableChange& change) {
  return TransactLegacyWith(LegacyOpsFor(family), kXtablesLock, change);
}

}  // namespace nodegate::portmap::ipt
