#pragma once
// Table nat of one family in the legacy x_tables, through libiptc: a snapshot of the whole
// table, changed in memory and replaced in one commit, taken under /run/xtables.lock as the
// iptables tools take it (libiptc takes no lock itself).

#include <memory>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/nat_table.h"

namespace nodegate::portmap::ipt {

// Runs `change` on a fresh snapshot of `family`'s table nat under the xtables lock, and commits
// it when it reports a change. A commit that raced with a writer that ignores the lock (EAGAIN)
// is retried on a new snapshot. Errors: code 100 (libiptc's message).
Status TransactLegacy(net::Family family, const NatTableChange& change);

}  // namespace nodegate::portmap::ipt
