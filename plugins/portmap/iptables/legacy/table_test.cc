// TransactLegacy's retry loop (TransactLegacyWith) over a fake libiptc (LegacyOps of functions
// over an in-memory table nat) and a lock file of the test's own: under the lock, held for the
// whole loop, a commit failing with EAGAIN (a writer that ignores the lock replaced the table
// meanwhile) starts over on a new snapshot, at most kLegacyCommitAttempts times; any other
// error ends the transaction at once. The real libiptc is the netns tier's
// (tests/portmap/iptables_netns_test.cc).
#include "plugins/portmap/iptables/legacy/table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "lib/sys/fd.h"
#include "plugins/portmap/iptables/legacy/ops.h"

namespace nodegate::portmap::ipt {
namespace {

constexpr char kChain[] = "CNI-HOSTPORT-MASQ";
constexpr char kOtherChain[] = "CNI-HOSTPORT-SETMARK";

// Whether someone holds an exclusive flock on the file `fd` is open on: a lock of ours on
// this other open file description of it is refused then.
bool LockedByOther(int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

// libiptc as the loop meets it: a table nat of chain names (the committed one), snapshots that
// copy it, and commits that fail with the errnos scripted for them.
struct FakeLibiptc {
  std::string lock_path;
  std::set<std::string> chains;   // committed
  int init_errno = 0;             // init fails with it, when set
  std::deque<int> commit_errnos;  // the next commits fail with these, in order
  // What a writer that ignores the lock commits while an EAGAIN commit of ours is in flight.
  std::function<void(std::set<std::string>&)> racing_write;
  int inits = 0;
  int frees = 0;
  int commits = 0;         // tried
  int applied = 0;         // of those, applied
  int unlocked_calls = 0;  // init, change or commit seen without the lock held

  // The file the loop locked, as the first check found it at lock_path. Each EAGAIN commit
  // unlinks lock_path: a loop that let go of the lock between attempts and took it again
  // would then hold a new file's lock, and this one's would be free.
  sys::UniqueFd locked_file;
  void CheckLock() {
    if (!locked_file.valid())
      locked_file = sys::UniqueFd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!locked_file.valid() || !LockedByOther(locked_file.get())) ++unlocked_calls;
  }
  bool LockReleased() const { return locked_file.valid() && !LockedByOther(locked_file.get()); }
};

FakeLibiptc* fake = nullptr;  // the running test's

// A snapshot: libiptc's handle is opaque, so ours is another type behind its pointer.
struct Snapshot {
  std::set<std::string> chains;
};
Snapshot* SnapshotOf(xtc_handle* h) { return reinterpret_cast<Snapshot*>(h); }

xtc_handle* FakeInit(const char* table) {
  fake->CheckLock();
  ++fake->inits;
  EXPECT_STREQ(table, kTable);
  if (fake->init_errno != 0) {
    errno = fake->init_errno;
    return nullptr;
  }
  return reinterpret_cast<xtc_handle*>(new Snapshot{fake->chains});
}

void FakeFree(xtc_handle* h) {
  ++fake->frees;
  delete SnapshotOf(h);
}

int FakeIsChain(const char* chain, xtc_handle* const h) {
  return SnapshotOf(h)->chains.count(chain) > 0 ? 1 : 0;
}

int FakeCreateChain(const char* chain, xtc_handle* h) {
  if (!SnapshotOf(h)->chains.insert(chain).second) {
    errno = EEXIST;
    return 0;
  }
  return 1;
}

int FakeCommit(xtc_handle* h) {
  fake->CheckLock();
  ++fake->commits;
  if (!fake->commit_errnos.empty()) {
    const int err = fake->commit_errnos.front();
    fake->commit_errnos.pop_front();
    if (err == EAGAIN) {
      if (fake->racing_write) fake->racing_write(fake->chains);
      ::unlink(fake->lock_path.c_str());
    }
    errno = err;
    return 0;
  }
  fake->chains = SnapshotOf(h)->chains;
  ++fake->applied;
  return 1;
}

const char* FakeStrerror(int err) { return std::strerror(err); }

// The entry functions are not reached by the changes here: left null, a call would crash.
const LegacyOps kFakeOps = {
    .family = net::Family::kV4,
    .init = FakeInit,
    .free = FakeFree,
    .is_chain = FakeIsChain,
    .create_chain = FakeCreateChain,
    .flush_entries = nullptr,
    .delete_chain = nullptr,
    .delete_num_entry = nullptr,
    .commit = FakeCommit,
    .strerror = FakeStrerror,
    .first_rule = nullptr,
    .next_rule = nullptr,
    .get_target = nullptr,
    .append = nullptr,
    .insert = nullptr,
    .name = "iptables",
};

class TransactLegacyLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/ng-legacy-table-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    libiptc_.lock_path = dir_ + "/xtables.lock";
    fake = &libiptc_;
  }
  void TearDown() override {
    fake = nullptr;
    std::filesystem::remove_all(dir_);
  }

  Status Transact(const NatTableChange& change) {
    return TransactLegacyWith(kFakeOps, libiptc_.lock_path, change);
  }

  // The layout's way with a shared chain: created only when missing.
  NatTableChange EnsureChain() {
    return [this](NatTable& table) -> Result<bool> {
      ++runs_;
      libiptc_.CheckLock();
      if (table.HasChain(kChain)) return false;
      NG_RETURN_IF_ERROR(table.CreateChain(kChain));
      return true;
    };
  }

  std::string dir_;
  FakeLibiptc libiptc_;
  int runs_ = 0;
};

TEST_F(TransactLegacyLoop, CommitsOnceUnderTheLock) {
  const Status s = Transact(EnsureChain());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(libiptc_.inits, 1);
  EXPECT_EQ(libiptc_.commits, 1);
  EXPECT_EQ(libiptc_.applied, 1);
  EXPECT_EQ(libiptc_.chains, std::set<std::string>{kChain});
  EXPECT_EQ(libiptc_.unlocked_calls, 0);
  EXPECT_TRUE(libiptc_.LockReleased());
}

// A writer that ignores the lock replaced the table under two of our commits: each retry runs
// the change on a new snapshot, which holds that writer's chain, and ours keeps it.
TEST_F(TransactLegacyLoop, EagainTwiceThenSuccessRetriesOnNewSnapshots) {
  libiptc_.commit_errnos = {EAGAIN, EAGAIN};
  libiptc_.racing_write = [](std::set<std::string>& chains) { chains.insert(kOtherChain); };
  const Status s = Transact(EnsureChain());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(libiptc_.inits, 3);
  EXPECT_EQ(libiptc_.frees, 3);
  EXPECT_EQ(runs_, 3);
  EXPECT_EQ(libiptc_.commits, 3);
  EXPECT_EQ(libiptc_.applied, 1);
  EXPECT_EQ(libiptc_.chains, (std::set<std::string>{kChain, kOtherChain}));
  EXPECT_EQ(libiptc_.unlocked_calls, 0);  // one lock, held across the attempts
  EXPECT_TRUE(libiptc_.LockReleased());
}

TEST_F(TransactLegacyLoop, EagainEveryTimeGivesUpAfterTheLastAttempt) {
  libiptc_.commit_errnos.assign(10, EAGAIN);
  const Status s = Transact(EnsureChain());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kErrKernel);
  EXPECT_EQ(s.error().msg, "iptables: commit table nat: " + std::string(std::strerror(EAGAIN)));
  EXPECT_EQ(libiptc_.inits, kLegacyCommitAttempts);
  EXPECT_EQ(libiptc_.commits, kLegacyCommitAttempts);
  EXPECT_EQ(libiptc_.applied, 0);
  EXPECT_TRUE(libiptc_.chains.empty());
  EXPECT_EQ(libiptc_.unlocked_calls, 0);
}

TEST_F(TransactLegacyLoop, OtherCommitErrorsAreNotRetried) {
  libiptc_.commit_errnos = {EPERM};
  const Status s = Transact(EnsureChain());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().msg, "iptables: commit table nat: " + std::string(std::strerror(EPERM)));
  EXPECT_EQ(libiptc_.inits, 1);
  EXPECT_EQ(libiptc_.commits, 1);
  EXPECT_EQ(libiptc_.applied, 0);
  EXPECT_TRUE(libiptc_.chains.empty());
}

TEST_F(TransactLegacyLoop, UnreadableTableIsNotRetried) {
  libiptc_.init_errno = EPERM;
  const Status s = Transact(EnsureChain());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().msg, "iptables: cannot read table nat: " + std::string(std::strerror(EPERM)));
  EXPECT_EQ(libiptc_.inits, 1);
  EXPECT_EQ(runs_, 0);
  EXPECT_EQ(libiptc_.commits, 0);
}

TEST_F(TransactLegacyLoop, FailingChangeIsNotCommittedNorRetried) {
  libiptc_.chains = {kChain};
  const Status s = Transact([](NatTable& table) -> Result<bool> {
    NG_RETURN_IF_ERROR(table.CreateChain(kChain));  // EEXIST
    return true;
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().msg, "iptables: create chain " + std::string(kChain) + ": " +
                               std::string(std::strerror(EEXIST)));
  EXPECT_EQ(libiptc_.inits, 1);
  EXPECT_EQ(libiptc_.commits, 0);
}

TEST_F(TransactLegacyLoop, NoOpChangeCommitsNothing) {
  libiptc_.chains = {kChain};
  const Status s = Transact(EnsureChain());
  ASSERT_TRUE(s.ok()) << s.error().msg;
  EXPECT_EQ(libiptc_.inits, 1);
  EXPECT_EQ(libiptc_.frees, 1);
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(libiptc_.commits, 0);
  EXPECT_EQ(libiptc_.unlocked_calls, 0);
}

}  // namespace
}  // namespace nodegate::portmap::ipt
