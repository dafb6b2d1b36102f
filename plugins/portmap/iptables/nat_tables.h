#pragma once
// The node's tables nat as the iptables layout reaches them: per family, in either mode
// (mode.h), one transaction at a time (nat_table.h). The backend (backend.cc) and bridge's
// ipMasq (plugins/bridge/masq.cc) reach the kernel's tables nat only through this seam, so
// their rollback, refusal and DEL/GC paths also run against the in-memory fake of
// plugins/portmap/testing/fake_nat_tables.h in the unit tier.
//
//   ipt::NatTables& tables = ipt::RealNatTables();
//   NG_RETURN_IF_ERROR(tables.Transact(net::Family::kV4, IptablesMode::kNft, change, chains));

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/iptables/mode.h"
#include "plugins/portmap/iptables/nat_table.h"

namespace nodegate::portmap::ipt {

class NatTables {
 public:
  virtual ~NatTables() = default;

  // Runs `change` as one transaction on table nat of (family, mode): nothing of it is applied
  // when it fails. `change` may run more than once when another writer committed meanwhile
  // (legacy/table.h's TransactLegacy, nft/table.h's TransactNft). `chains_read`: the chains
  // `change` asks about (nf_tables reads them in one round trip). Errors: code 100.
  virtual Status Transact(net::Family family, IptablesMode mode, const NatTableChange& change,
                          const std::vector<std::string>& chains_read) = 0;
  // The mode the layout uses in `family` (mode.h's ChooseMode on the node's facts).
  virtual ModeChoice ChooseMode(net::Family family, std::optional<IptablesMode> configured) = 0;
  // Whether table nat of (family, mode) answers in this network namespace (the kernel loads
  // the legacy table for this if needed).
  virtual bool Usable(net::Family family, IptablesMode mode) = 0;
  // Whether table nat of (family, mode) may hold `chain`, found without creating the table:
  // nf_tables looks the chain up; a legacy table only says whether it is loaded (reading its
  // chains copies the whole table).
  virtual bool MayHoldChain(net::Family family, IptablesMode mode, const std::string& chain) = 0;
};

// The kernel's tables nat in the calling thread's network namespace (stateless; one instance).
NatTables& RealNatTables();

}  // namespace nodegate::portmap::ipt
