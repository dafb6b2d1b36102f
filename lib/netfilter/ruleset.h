#pragma once
// The seam between nf_tables' users and the kernel: everything portmap's nftables backend
// (plugins/portmap/nftables/backend.cc) and bridge's nftables masquerade (plugins/bridge/
// masq.cc) ask of the namespace's ruleset, as an interface. RealRuleset() goes to the kernel
// through query.h and nft_batch.h, unchanged; lib/netfilter/testing/fake_ruleset.h keeps a
// ruleset in memory, so the callers' retry, refusal and rollback paths also run in the unit
// tier.
//
//   netfilter::Ruleset& ruleset = netfilter::RealRuleset();
//   NG_ASSIGN_OR_RETURN(auto reader, ruleset.OpenTable(netfilter::kNfprotoInet, "cni_hostport"));
//   NG_ASSIGN_OR_RETURN(const uint32_t generation, reader->Generation());
//   ... reads, then a batch built on them
//   NG_ASSIGN_OR_RETURN(auto refused, ruleset.Commit(batch, generation));

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"

namespace nodegate::netfilter {

// The reads of one table (TableReader's, which implements this; see query.h for each read's
// meaning, absences included).
class TableReads {
 public:
  virtual ~TableReads() = default;
  virtual Result<uint32_t> Generation() = 0;
  virtual Result<std::vector<std::string>> SetNames() = 0;
  virtual Result<std::optional<SetElement>> Element(const std::string& set,
                                                    const std::vector<uint8_t>& key) = 0;
  virtual Result<std::vector<SetElement>> Elements(const std::string& set) = 0;
  virtual Result<std::optional<std::string>> ChainComment(const std::string& chain) = 0;
  virtual Result<std::optional<SetInfo>> Set(const std::string& set) = 0;
  virtual Result<std::vector<RuleRecord>> Rules(const std::string& chain) = 0;
};

class Ruleset {
 public:
  virtual ~Ruleset() = default;
  // A reader of `family` `table` (TableReader::Open). Errors: code 100.
  virtual Result<std::unique_ptr<TableReads>> OpenTable(uint8_t family,
                                                        const std::string& table) = 0;
  // query.h's HasTables.
  virtual Result<std::vector<bool>> HasTables(const std::vector<TableRef>& tables) = 0;
  // query.h's ProbeNfTables.
  virtual Status Probe() = 0;
  // NftBatch::Commit: empty when applied; else every refused change, and nothing applied. With
  // `generation`, StaleGeneration (nfnl.h) when the ruleset changed since.
  virtual Result<std::vector<BatchRefusal>> Commit(const NftBatch& batch,
                                                   std::optional<uint32_t> generation = {}) = 0;
};

// The kernel's ruleset in the calling thread's network namespace (stateless; one instance).
Ruleset& RealRuleset();

}  // namespace nodegate::netfilter
