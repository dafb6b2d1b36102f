#pragma once
// Table nat of one family in the legacy x_tables, through libiptc: a snapshot of the whole
// table, changed in memory and replaced in one commit, taken under /run/xtables.lock as the
// iptables tools take it (libiptc takes no lock itself).

#include <memory>
#include <string>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/nat_table.h"

namespace nodegate::portmap::ipt {

// Runs `change` on a fresh snapshot of `family`'s table nat under the xtables lock, and commits
// it when it reports a change. A commit that raced with a writer that ignores the lock (EAGAIN)
// is retried on a new snapshot. Errors: code 100 (libiptc's message).
Status TransactLegacy(net::Family family, const NatTableChange& change);

// The lock the iptables tools take around their libiptc transactions (iptables' XT_LOCK_NAME).
inline constexpr char kXtablesLock[] = "/run/xtables.lock";
// How many snapshots TransactLegacy commits before it returns the commit's EAGAIN.
inline constexpr int kLegacyCommitAttempts = 3;

struct LegacyOps;  // legacy/ops.h

// TransactLegacy's loop: under the flock of `lock_path`, taken once and held across the
// attempts, a snapshot through `ops` (libiptc's functions, LegacyOpsFor; a test's fake),
// `change`, and its commit; a commit failing with EAGAIN starts over on a new snapshot, at most
// kLegacyCommitAttempts times. Any other error is returned at once.
Status TransactLegacyWith(const LegacyOps& ops, const std::string& lock_path,
                          const NatTableChange& change);

}  // namespace nodegate::portmap::ipt
