// The in-memory ruleset (lib/netfilter/testing/fake_ruleset.h) against the kernel it stands in
// for: the same batches and the same verbs of portmap's nftables backend and bridge's nftables
// ipMasq, sent to nf_tables in a throwaway namespace and to the fake, must be answered alike
// (each refusal's change and errno, each verb's error code) and leave rulesets that read back
// alike through the same reads. This is what lets the unit tier trust the fake.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/hex.h"
#include "lib/cni/conf.h"
#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/ruleset.h"
#include "lib/netfilter/testing/fake_ruleset.h"
#include "lib/sys/netns.h"
#include "plugins/bridge/masq.h"
#include "plugins/portmap/nftables/rules.h"
#include "plugins/portmap/port_mapper.h"
#include "plugins/portmap/testing/config_text.h"
#include "tests/support/netns_fixture.h"

namespace nodegate::netfilter {
namespace {

using nodegate::testing::TestNetns;
using testing::FakeRuleset;

constexpr char kTable[] = "t";

// What the reads see of `family` `table`: each set (by name) with its elements (sorted), then
// each rule in order with its chain, comment and expressions (lookups' set names left out:
// the kernel names an anonymous set __setN where the batch said __set%d).
std::string ReadBack(Ruleset& ruleset, uint8_t family, const std::string& table) {
  auto reader = ruleset.OpenTable(family, table);
  if (!reader.ok()) return "open: " + reader.error().msg;
  std::string out;
  auto names = (*reader)->SetNames();
  if (!names.ok()) return "set names: " + names.error().msg;
  std::sort(names->begin(), names->end());
  for (const auto& name : *names) {
    auto elements = (*reader)->Elements(name);
    if (!elements.ok()) return "elements: " + elements.error().msg;
    std::vector<std::string> lines;
    for (const auto& e : *elements) {
      lines.push_back(
          "  " + HexEncode(e.key) + (e.key_end.empty() ? "" : "-" + HexEncode(e.key_end)) +
          ((e.flags & NFT_SET_ELEM_INTERVAL_END) ? " end" : "") +
          (e.data.empty() ? "" : " : " + HexEncode(e.data)) + " \"" + e.comment + "\"\n");
    }
    std::sort(lines.begin(), lines.end());
    out += "set " + name + "\n";
    for (const auto& l : lines) out += l;
  }
  auto rules = (*reader)->Rules("");
  if (!rules.ok()) return "rules: " + rules.error().msg;
  for (const auto& r : *rules) {
    auto exprs = DecodeExpressions(r.expressions);
    if (!exprs) return "rule that does not decode in " + r.chain;
    for (auto& e : *exprs) {
      if (auto* lookup = std::get_if<expr::Lookup>(&e)) {
        lookup->set.clear();
        lookup->set_id = 0;
      }
    }
    out += "rule in " + r.chain + " \"" + UserDataComment(r.userdata) + "\"\n" +
           ExpressionsText(*exprs);
  }
  return out;
}

// A verb's outcome on the fake and on the kernel: both succeed, or both fail with one code.
void ExpectSameStatus(const Status& fake, const Status& kernel) {
  EXPECT_EQ(fake.ok(), kernel.ok()) << (kernel.ok() ? fake : kernel).error().msg;
  if (!fake.ok() && !kernel.ok()) {
    EXPECT_EQ(fake.error().code, kernel.error().code) << kernel.error().msg;
  }
}

struct Answered {
  std::string error;  // "" when the call succeeded; else its code, or "stale"
  std::vector<std::pair<size_t, int>> refusals;
  bool operator==(const Answered&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Answered& a) {
  os << "{" << a.error;
  for (const auto& [change, error] : a.refusals) os << " " << change << ":" << error;
  return os << "}";
}
Answered AnswerOf(const Result<std::vector<BatchRefusal>>& sent) {
  Answered a;
  if (!sent.ok()) {
    a.error = IsStaleGeneration(sent.error()) ? "stale" : std::to_string(sent.error().code);
    return a;
  }
  for (const auto& r : *sent) a.refusals.emplace_back(r.change, r.error);
  return a;
}

// A fresh namespace entered for the test's life: the kernel's ruleset there, and a fake.
class FakeAgainstKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    NG_REQUIRE_ROOT();
    netns_ = std::make_unique<TestNetns>("ng-nftfake");
    auto scope = sys::NetnsScope::Enter(netns_->path());
    ASSERT_TRUE(scope.ok()) << scope.error().msg;
    scope_ = std::move(*scope);
  }
  void TearDown() override {
    scope_.reset();
    netns_.reset();
  }

  // Sends `batch` to both (on each one's generation when `on_generation`), expecting the same
  // answer.
  void CommitBoth(const NftBatch& batch, const std::string& what, bool on_generation = false) {
    SCOPED_TRACE(what);
    std::optional<uint32_t> kernel_generation, fake_generation;
    if (on_generation) {
      kernel_generation = *(*kernel_.OpenTable(kNfprotoInet, kTable))->Generation();
      fake_generation = fake_.generation();
    }
    const Answered kernel = AnswerOf(kernel_.Commit(batch, kernel_generation));
    const Answered fake = AnswerOf(fake_.Commit(batch, fake_generation));
    EXPECT_EQ(fake, kernel);
  }
  void ExpectSameReadBack(uint8_t family, const std::string& table) {
    EXPECT_EQ(ReadBack(fake_, family, table), ReadBack(kernel_, family, table));
  }

  std::unique_ptr<TestNetns> netns_;
  std::unique_ptr<sys::NetnsScope> scope_;
  Ruleset& kernel_ = RealRuleset();
  FakeRuleset fake_;
};

ElementChange Change(ElementVerb verb, const std::string& set, Bytes key, Bytes data = {}) {
  return {verb, set, {{.key = std::move(key), .data = std::move(data), .comment = "x"}}};
}

// The refusals netfilter_fake_ruleset_test pins, answered by the kernel.
TEST_F(FakeAgainstKernel, BatchesAreAnsweredAlike) {
  NftBatch setup(kNfprotoInet, kTable);
  setup.AddTable({.comment = "fake"});
  setup.AddSet({.name = "m",
                .id = 1,
                .flags = NFT_SET_MAP,
                .key_type = 7,
                .key_len = 4,
                .data_type = 7,
                .data_len = 4});
  setup.AddSet({.name = "s", .id = 2, .key_type = 7, .key_len = 4});
  setup.AddChain({.name = "c", .comment = "chain c"});
  setup.AddChain({.name = "target"});
  setup.AddRule({.chain = "c", .exprs = {expr::Verdict{NFT_JUMP, "target"}}, .comment = "r1"});
  setup.AddRule({.chain = "c",
                 .exprs = {expr::Meta{NFT_META_MARK, NFT_REG_1},
                           expr::Lookup{.sreg = NFT_REG_1, .set = "s"}}});
  setup.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));
  CommitBoth(setup, "setup");

  NftBatch refused(kNfprotoInet, kTable);
  refused.ChangeElements(Change(ElementVerb::kAdd, "s", {7, 7, 7, 7}));
  refused.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));
  refused.ChangeElements(Change(ElementVerb::kCreate, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));
  refused.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {2, 2, 2, 2}));
  refused.ChangeElements(Change(ElementVerb::kDelete, "s", {8, 8, 8, 8}));
  refused.ChangeElements(Change(ElementVerb::kAdd, "absent", {1, 0, 0, 0}));
  refused.ChangeElements(Change(ElementVerb::kAdd, "s", {1, 2}));
  refused.ChangeElements(Change(ElementVerb::kAdd, "m", {5, 0, 0, 0}));
  refused.DeleteRule(kNfprotoInet, kTable, "c", 999);
  refused.AddRule({.chain = "c", .exprs = {expr::Verdict{NFT_JUMP, "nowhere"}}});
  refused.DeleteSet("absent");
  refused.DeleteChain("target");  // jumped to
  refused.DeleteSet("s");         // looked up
  refused.DeleteChain("absent");
  refused.AddSet({.name = "no-id", .key_type = 7, .key_len = 4});  // a set needs its batch ID
  CommitBoth(refused, "refusals");
  ExpectSameReadBack(kNfprotoInet, kTable);

  NftBatch in_order(kNfprotoInet, kTable);
  in_order.FlushChain("c");
  in_order.DeleteChain("target");
  in_order.DeleteSet("s");
  in_order.ChangeElements(Change(ElementVerb::kDelete, "m", {1, 0, 0, 0}));
  CommitBoth(in_order, "deletions in order");
  ExpectSameReadBack(kNfprotoInet, kTable);

  NftBatch again(kNfprotoInet, kTable);
  again.ChangeElements(Change(ElementVerb::kAdd, "m", {3, 0, 0, 0}, {3, 3, 3, 3}));
  CommitBoth(again, "on the generation read", true);
  ExpectSameReadBack(kNfprotoInet, kTable);
}

// A commit on a generation that another commit has passed.
TEST_F(FakeAgainstKernel, StaleGenerationIsRefusedAlike) {
  NftBatch setup(kNfprotoInet, kTable);
  setup.AddTable({});
  const uint32_t kernel_generation = *(*kernel_.OpenTable(kNfprotoInet, kTable))->Generation();
  const uint32_t fake_generation = fake_.generation();
  CommitBoth(setup, "setup");
  EXPECT_EQ(AnswerOf(fake_.Commit(setup, fake_generation)),
            AnswerOf(kernel_.Commit(setup, kernel_generation)));
  EXPECT_EQ(AnswerOf(fake_.Commit(setup, fake_generation)).error, "stale");
}

portmap::Config PortmapConfig(const std::string& id, const std::string& address,
                              const std::string& mappings, portmap::Purpose purpose) {
  const std::string prev = R"(,"prevResult":{"cniVersion":"1.0.0",)"
                           R"("interfaces":[{"name":"eth0","sandbox":"/run/netns/y"}],)"
                           R"("ips":[{"interface":0,"address":")" +
                           address + R"(/16"}]})";
  auto conf =
      cni::ParseNetConf(portmap::testing::ConfText(prev, mappings, false), portmap::ConfigShape());
  EXPECT_TRUE(conf.ok()) << conf.error().msg;
  auto config =
      portmap::ParseConfig(*conf, {.container_id = id, .ifname = "eth0", .purpose = purpose});
  EXPECT_TRUE(config.ok()) << config.error().msg;
  return *config;
}

// portmap's nftables backend, verb by verb, on both: the same answers, the same table after
// each (its first ADD, a second container, a host port taken, CHECK, DEL, GC).
TEST_F(FakeAgainstKernel, PortmapVerbsGoAlike) {
  auto on_kernel = portmap::MakeNftablesMapper(kernel_);
  auto on_fake = portmap::MakeNftablesMapper(fake_);
  const std::string mappings = portmap::testing::kMappings;
  const std::string other = R"([{"hostPort":9090,"containerPort":90,"protocol":"tcp"}])";
  using portmap::Purpose;
  struct Step {
    std::string name;
    std::function<Status(portmap::PortMapper&)> verb;
  };
  const std::vector<Step> steps = {
      {"ADD ctr1",
       [&](auto& m) {
         return m.Forward(PortmapConfig("ctr1", "10.88.0.2", mappings, Purpose::kAdd));
       }},
      {"ADD keep",
       [&](auto& m) {
         return m.Forward(PortmapConfig("keep", "10.88.0.3", other, Purpose::kAdd));
       }},
      {"ADD taken",
       [&](auto& m) {
         return m.Forward(PortmapConfig("taken", "10.88.0.4", mappings, Purpose::kAdd));
       }},
      {"CHECK ctr1",
       [&](auto& m) {
         return m.Check(PortmapConfig("ctr1", "10.88.0.2", mappings, Purpose::kCheck));
       }},
      {"DEL ctr1",
       [&](auto& m) {
         return m.Unforward(PortmapConfig("ctr1", "10.88.0.2", mappings, Purpose::kDel));
       }},
      {"CHECK ctr1 gone",
       [&](auto& m) {
         return m.Check(PortmapConfig("ctr1", "10.88.0.2", mappings, Purpose::kCheck));
       }},
      {"ADD ctr2",
       [&](auto& m) {
         return m.Forward(PortmapConfig("ctr2", "10.88.0.5", mappings, Purpose::kAdd));
       }},
      {"GC", [&](auto& m) { return m.Gc("rnet", {"keep"}); }},
  };
  for (const auto& step : steps) {
    SCOPED_TRACE(step.name);
    const Status kernel = step.verb(*on_kernel);
    const Status fake = step.verb(*on_fake);
    ExpectSameStatus(fake, kernel);
    ExpectSameReadBack(kNfprotoInet, portmap::nft::kTable);
  }
}

// bridge's nftables ipMasq on both: setup of two attachments, CHECK, teardown, GC.
TEST_F(FakeAgainstKernel, BridgeMasqVerbsGoAlike) {
  const auto plan = [](const std::string& id) {
    return bridge::BuildMasqPlan(
        "mnet", id,
        {*net::IpPrefix::Parse("10.22.0.5/16"), *net::IpPrefix::Parse("fd00:22::5/64")});
  };
  const auto attachment = [](const std::string& id) {
    return bridge::MasqAttachment{.network = "mnet", .ifname = "eth0", .container_id = id};
  };
  struct Step {
    std::string name;
    std::function<Status(Ruleset&)> verb;
  };
  const std::vector<Step> steps = {
      {"setup ctr1",
       [&](Ruleset& r) { return bridge::SetupNftMasq(r, attachment("ctr1"), plan("ctr1")); }},
      {"setup keep",
       [&](Ruleset& r) { return bridge::SetupNftMasq(r, attachment("keep"), plan("keep")); }},
      {"setup ctr1 again",
       [&](Ruleset& r) { return bridge::SetupNftMasq(r, attachment("ctr1"), plan("ctr1")); }},
      {"check ctr1",
       [&](Ruleset& r) { return bridge::CheckNftMasq(r, attachment("ctr1"), plan("ctr1")); }},
      {"teardown ctr1", [&](Ruleset& r) { return bridge::TeardownNftMasq(r, attachment("ctr1")); }},
      {"check ctr1 gone",
       [&](Ruleset& r) { return bridge::CheckNftMasq(r, attachment("ctr1"), plan("ctr1")); }},
      {"setup stale",
       [&](Ruleset& r) { return bridge::SetupNftMasq(r, attachment("stale"), plan("stale")); }},
      {"gc",
       [&](Ruleset& r) {
         return bridge::GcNftMasq(r, "mnet", {{"keep", "eth0"}});
       }},
  };
  for (const auto& step : steps) {
    SCOPED_TRACE(step.name);
    const Status kernel = step.verb(kernel_);
    const Status fake = step.verb(fake_);
    ExpectSameStatus(fake, kernel);
    ExpectSameReadBack(kNfprotoInet, bridge::kMasqTable);
  }
}

}  // namespace
}  // namespace nodegate::netfilter
