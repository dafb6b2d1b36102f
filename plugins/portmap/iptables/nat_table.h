#pragma once
// Table nat of one family, as the iptables layout uses it (rules.h), in whichever of the two
// encodings the node's iptables has:
//
//   legacy  x_tables through libiptc (legacy/table.h): a snapshot of the whole table,
//           changed in memory and replaced in one commit, under /run/xtables.lock;
//   nft     nf_tables (`table ip nat`, `table ip6 nat`) in iptables-nft 1.8's encoding
//           (nft/table.h): changes buffered as one netlink batch, sent with the
//           generation it was built on, so a concurrent writer makes it fail whole (and the
//           caller rebuilds it) instead of being overwritten.
//
// One object is one attempt of one transaction: reads see the kernel as it was when the object
// was opened plus nothing of what was buffered since. The backend logic (what to add, replace,
// check, remove) is written once against this interface.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::ipt {

class NatTable {
 public:
  virtual ~NatTable() = default;

  virtual net::Family family() const = 0;
  // "iptables" / "ip6tables" (legacy), "iptables-nft" / "ip6tables-nft": for messages.
  virtual std::string name() const = 0;

  virtual bool HasChain(const std::string& chain) = 0;
  // Whether `chain` holds a rule equal to `rule` the way `iptables -C` compares rules
  // (header, matches in order with their data, target and its data; not counters).
  virtual Result<bool> HasRule(const std::string& chain, const Rule& rule) = 0;

  // Buffered changes. A built-in chain (PREROUTING, OUTPUT, POSTROUTING, INPUT) that does not
  // exist yet is created by the first rule added to it, as the iptables tools do.
  virtual Status CreateChain(const std::string& chain) = 0;
  virtual Status Append(const std::string& chain, const Rule& rule) = 0;
  virtual Status InsertFirst(const std::string& chain, const Rule& rule) = 0;
  // Deletes every rule of `chain` that jumps to one of `targets` (nothing if no such chain).
  virtual Status DeleteJumps(const std::string& chain, const std::set<std::string>& targets) = 0;
  virtual Status Flush(const std::string& chain) = 0;
  virtual Status DeleteChain(const std::string& chain) = 0;

  // The owners of the entry rules in CNI-HOSTPORT-DNAT: jump target -> comment owner.
  virtual Result<std::map<std::string, CommentOwner>> EntryOwners() = 0;
  // The rules of `parent` that jump to a chain named `prefix`...: (target chain, the rule's
  // first comment or "") in the chain's order. Nothing when `parent` does not exist.
  virtual Result<std::vector<std::pair<std::string, std::string>>> JumpComments(
      const std::string& parent, const std::string& prefix) = 0;
};

// One attempt of a transaction's work on a table: true when it buffered changes to commit.
// Each writer's Transact (legacy/table.h, nft/table.h) may run it more than once.
using NatTableChange = std::function<Result<bool>(NatTable&)>;

}  // namespace nodegate::portmap::ipt
