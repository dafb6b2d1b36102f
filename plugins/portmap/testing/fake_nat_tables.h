#pragma once
// An in-memory NatTables (iptables/nat_tables.h) with the kernel's semantics as the iptables
// layout meets them, in the manner of knftables' Fake: the tables nat of both families in both
// modes are kept as data; a transaction works on a copy and replaces the table only when it
// commits, so a failure leaves nothing; it can be told to fail an operation (or its Nth call),
// to find that another writer committed before it (the real writers then run the change again,
// a bounded number of times), or to report a table unusable; and a table dumps as
// `iptables-save` lines for assertions.
//
// What it checks as the kernel does: a chain created twice, a rule added to a missing chain,
// a chain flushed or deleted while missing, a chain deleted while it holds rules or is jumped
// to, and (at commit, as nf_tables does) a jump to a chain the table does not have.
//
//   FakeNatTables tables;
//   auto mapper = MakeIptablesMapper(std::nullopt, tables);
//   tables.FailOperation(FakeNatTables::kCommit, net::Family::kV6);
//   EXPECT_FALSE(mapper->Forward(config).ok());
//   EXPECT_THAT(tables.Dump(net::Family::kV4), Not(HasSubstr("CNI-DN-")));  // rolled back

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/legacy/table.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nat_table.h"
#include "plugins/portmap/iptables/nat_tables.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::testing {

// One table nat: its chains by name (the four built-in ones always there) and their rules.
using FakeChains = std::map<std::string, std::vector<ipt::Rule>>;

class FakeNatTables final : public ipt::NatTables {
 public:
  // The operations a fault can name.
  static constexpr char kCreateChain[] = "create chain";
  static constexpr char kAppend[] = "append";
  static constexpr char kInsertFirst[] = "insert";
  static constexpr char kDeleteJumps[] = "delete jumps";
  static constexpr char kFlush[] = "flush";
  static constexpr char kDeleteChain[] = "delete chain";
  static constexpr char kCommit[] = "commit";
  // How many times a transaction runs its change before a concurrent writer makes it fail:
  // the legacy writer's bound; nf_tables' (kNftCommitAttempts) is higher and behaves alike.
  static constexpr int kAttempts = ipt::kLegacyCommitAttempts;

  FakeNatTables();

  // ipt::NatTables
  Status Transact(net::Family family, IptablesMode mode, const ipt::NatTableChange& change,
                  const std::vector<std::string>& chains_read) override;
  ModeChoice ChooseMode(net::Family family, std::optional<IptablesMode> configured) override;
  bool Usable(net::Family family, IptablesMode mode) override;
  bool MayHoldChain(net::Family family, IptablesMode mode, const std::string& chain) override;

  // The node's mode in each family (ChooseMode without a configured one): nft by default.
  void SetNodeMode(IptablesMode mode) { node_mode_ = mode; }
  // A table that does not answer: its transactions fail, Usable is false.
  void SetUsable(net::Family family, IptablesMode mode, bool usable);

  // The `nth` call (counted from now, 1 = the next) of `operation` in `family` (any family when
  // nullopt) fails with code 100, failing its transaction.
  void FailOperation(const std::string& operation, std::optional<net::Family> family = {},
                     int nth = 1);
  // The next `times` transactions that commit in (family, mode) find that another writer
  // committed `write` after they read the table: the table takes `write`, and the transaction
  // runs its change again on the result (at most kAttempts times, then fails as the writers do).
  void ConcurrentWrite(net::Family family, IptablesMode mode,
                       std::function<void(FakeChains&)> write, int times = 1);

  // The committed table, to seed or change behind the plugin's back.
  FakeChains& Chains(net::Family family, IptablesMode mode = IptablesMode::kNft);
  // Whether the table was ever opened (a legacy table is loaded by its first reader).
  bool Loaded(net::Family family, IptablesMode mode) const;
  // The committed table as `iptables-save` prints it, without the table and counters lines:
  // "-N CHAIN" for every chain that is not built in (by name), then "-A CHAIN RULE" per rule
  // (chains by name, rules in order). Empty when the table holds nothing of anyone.
  std::string Dump(net::Family family, IptablesMode mode = IptablesMode::kNft) const;
  // Commits that reached the table, and changes run (attempts), in (family, mode).
  int commits(net::Family family, IptablesMode mode = IptablesMode::kNft) const;
  int attempts(net::Family family, IptablesMode mode = IptablesMode::kNft) const;

  // What the attempts call (one per operation): the injected fault it meets, if any.
  std::optional<Error> Fault(net::Family family, const std::string& operation,
                             const std::string& what);

 private:
  struct Table {
    FakeChains chains;
    bool usable = true;
    bool loaded = false;
    int commits = 0;
    int attempts = 0;
    std::vector<std::function<void(FakeChains&)>> concurrent;  // pending writers, in order
  };
  struct PendingFault {
    std::string operation;
    std::optional<net::Family> family;
    int remaining = 1;
  };
  Table& TableOf(net::Family family, IptablesMode mode);
  const Table* FindTable(net::Family family, IptablesMode mode) const;

  IptablesMode node_mode_ = IptablesMode::kNft;
  std::map<std::pair<net::Family, IptablesMode>, Table> tables_;
  std::vector<PendingFault> faults_;
};

// The name each writer gives its table in messages: "iptables", "ip6tables", "iptables-nft",
// "ip6tables-nft".
std::string FakeTableName(net::Family family, IptablesMode mode);

}  // namespace nodegate::portmap::testing
