#include "lib/netfilter/ruleset.h"

#include <utility>

namespace nodegate::netfilter {
namespace {

// TableReader behind the interface: each read is its own.
class KernelTableReads final : public TableReads {
 public:
  explicit KernelTableReads(TableReader reader) : reader_(std::move(reader)) {}

  Result<uint32_t> Generation() override { return reader_.Generation(); }
  Result<std::vector<std::string>> SetNames() override { return reader_.SetNames(); }
  Result<std::optional<SetElement>> Element(const std::string& set,
                                            const std::vector<uint8_t>& key) override {
    return reader_.Element(set, key);
  }
  Result<std::vector<SetElement>> Elements(const std::string& set) override {
    return reader_.Elements(set);
  }
  Result<std::optional<std::string>> ChainComment(const std::string& chain) override {
    return reader_.ChainComment(chain);
  }
  Result<std::optional<SetInfo>> Set(const std::string& set) override { return reader_.Set(set); }
  Result<std::vector<RuleRecord>> Rules(const std::string& chain) override {
    return reader_.Rules(chain);
  }

 private:
  TableReader reader_;
};

class KernelRuleset final : public Ruleset {
 public:
  Result<std::unique_ptr<TableReads>> OpenTable(uint8_t family, const std::string& table) override {
    NG_ASSIGN_OR_RETURN(TableReader reader, TableReader::Open(family, table));
    return std::unique_ptr<TableReads>(std::make_unique<KernelTableReads>(std::move(reader)));
  }
  Result<std::vector<bool>> HasTables(const std::vector<TableRef>& tables) override {
    return netfilter::HasTables(tables);
  }
  Status Probe() override { return ProbeNfTables(); }
  Result<std::vector<BatchRefusal>> Commit(const NftBatch& batch,
                                           std::optional<uint32_t> generation) override {
    return batch.Commit(generation);
  }
};

}  // namespace

Ruleset& RealRuleset() {
  static KernelRuleset ruleset;
  return ruleset;
}

}  // namespace nodegate::netfilter
