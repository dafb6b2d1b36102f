// The in-memory ruleset's nf_tables semantics, batch by batch: what it applies, what it refuses
// as the kernel does (and then applies nothing of the batch), the generation, and its faults.
#include "lib/netfilter/testing/fake_ruleset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <cerrno>

#include "lib/netfilter/nfnl.h"

namespace nodegate::netfilter::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTable[] = "t";

NftBatch Batch() { return NftBatch(kNfprotoInet, kTable); }

// A table with map `m` (4-byte keys to 4-byte data), set `s` and chain `c`.
NftBatch SetupBatch() {
  NftBatch b = Batch();
  b.AddTable({.comment = "fake"});
  b.AddSet({.name = "m", .id = 1, .flags = NFT_SET_MAP, .key_len = 4, .data_len = 4});
  b.AddSet({.name = "s", .id = 2, .key_len = 4});
  b.AddChain({.name = "c"});
  return b;
}

ElementChange Change(ElementVerb verb, const std::string& set, Bytes key, Bytes data = {}) {
  return {verb, set, {{.key = std::move(key), .data = std::move(data), .comment = "x"}}};
}

struct Refused {
  size_t change;
  int error;
  bool operator==(const Refused&) const = default;
};
std::vector<Refused> Refusals(const Result<std::vector<BatchRefusal>>& sent) {
  EXPECT_TRUE(sent.ok()) << sent.error().msg;
  std::vector<Refused> out;
  if (sent.ok()) {
    for (const auto& r : *sent) out.push_back({r.change, r.error});
  }
  return out;
}

class FakeRulesetTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Refusals(ruleset_.Commit(SetupBatch())).empty()); }
  std::vector<SetElement> Elements(const std::string& set) {
    auto reader = ruleset_.OpenTable(kNfprotoInet, kTable);
    EXPECT_TRUE(reader.ok());
    auto elements = (*reader)->Elements(set);
    EXPECT_TRUE(elements.ok());
    return *elements;
  }
  FakeRuleset ruleset_;
};

TEST_F(FakeRulesetTest, AppliesABatchAndBumpsTheGeneration) {
  const uint32_t generation = ruleset_.generation();
  NftBatch b = Batch();
  b.ChangeElements(Change(ElementVerb::kCreate, "m", {1, 2, 3, 4}, {9, 9, 9, 9}));
  EXPECT_TRUE(Refusals(ruleset_.Commit(b, generation)).empty());
  EXPECT_EQ(ruleset_.generation(), generation + 1);
  const auto elements = Elements("m");
  ASSERT_EQ(elements.size(), 1u);
  EXPECT_EQ(elements[0].key, (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(elements[0].data, (Bytes{9, 9, 9, 9}));
  EXPECT_EQ(elements[0].comment, "x");
  auto reader = ruleset_.OpenTable(kNfprotoInet, kTable);
  ASSERT_TRUE(reader.ok());
  EXPECT_THAT(*(*reader)->SetNames(), ElementsAre("m", "s"));
  EXPECT_EQ(*(*reader)->ChainComment("c"), std::optional<std::string>(""));
  EXPECT_EQ(*(*reader)->ChainComment("absent"), std::nullopt);
  EXPECT_TRUE((*(*reader)->Element("m", {1, 2, 3, 4})).has_value());
  EXPECT_FALSE((*(*reader)->Element("m", {1, 2, 3, 5})).has_value());
}

// Every refusal of a batch is reported (the kernel goes on to the end), and none of it applies.
TEST_F(FakeRulesetTest, RefusesAsTheKernelDoesAndAppliesNothing) {
  NftBatch first = Batch();
  first.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));
  ASSERT_TRUE(Refusals(ruleset_.Commit(first)).empty());
  const std::string before = ruleset_.Dump();

  NftBatch b = Batch();
  b.ChangeElements(Change(ElementVerb::kAdd, "s", {7, 7, 7, 7}));                   // 0: fine
  b.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));     // 1: same
  b.ChangeElements(Change(ElementVerb::kCreate, "m", {1, 0, 0, 0}, {1, 1, 1, 1}));  // 2: EEXIST
  b.ChangeElements(Change(ElementVerb::kAdd, "m", {1, 0, 0, 0}, {2, 2, 2, 2}));     // 3: EEXIST
  b.ChangeElements(Change(ElementVerb::kDelete, "s", {8, 8, 8, 8}));                // 4: ENOENT
  b.ChangeElements(Change(ElementVerb::kAdd, "absent", {1, 0, 0, 0}));              // 5: ENOENT
  b.ChangeElements(Change(ElementVerb::kAdd, "s", {1, 2}));                         // 6: EINVAL
  b.ChangeElements(Change(ElementVerb::kAdd, "m", {5, 0, 0, 0}));                   // 7: EINVAL
  b.DeleteRule(kNfprotoInet, kTable, "c", 99);                                      // 8: ENOENT
  b.AddRule({.chain = "c", .exprs = {expr::Verdict{NFT_JUMP, "nowhere"}}});         // 9: ENOENT
  b.DeleteSet("absent");                                                            // 10: ENOENT
  b.AddSet({.name = "no-id", .key_len = 4});                                        // 11: EINVAL
  EXPECT_THAT(
      Refusals(ruleset_.Commit(b)),
      ElementsAre(Refused{2, EEXIST}, Refused{3, EEXIST}, Refused{4, ENOENT}, Refused{5, ENOENT},
                  Refused{6, EINVAL}, Refused{7, EINVAL}, Refused{8, ENOENT}, Refused{9, ENOENT},
                  Refused{10, ENOENT}, Refused{11, EINVAL}));
  EXPECT_EQ(ruleset_.Dump(), before);
}

TEST_F(FakeRulesetTest, RulesHaveHandlesAndHoldWhatTheyReferTo) {
  NftBatch b = Batch();
  b.AddChain({.name = "target"});
  b.AddRule({.chain = "c", .exprs = {expr::Verdict{NFT_JUMP, "target"}}, .comment = "r1"});
  b.AddRule({.chain = "c",
             .exprs = {expr::Meta{NFT_META_L4PROTO, NFT_REG_1},
                       expr::Lookup{.sreg = NFT_REG_1, .set = "s"}}});
  ASSERT_TRUE(Refusals(ruleset_.Commit(b)).empty());
  auto reader = ruleset_.OpenTable(kNfprotoInet, kTable);
  const auto rules = *(*reader)->Rules("c");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_LT(rules[0].handle, rules[1].handle);
  EXPECT_EQ(UserDataComment(rules[0].userdata), "r1");
  EXPECT_EQ(DecodeExpressions(rules[0].expressions),
            (std::vector<Expr>{expr::Verdict{NFT_JUMP, "target"}}));

  NftBatch busy = Batch();
  busy.DeleteChain("target");  // jumped to
  busy.DeleteSet("s");         // looked up
  busy.FlushChain("c");        // frees both, but after them
  EXPECT_THAT(Refusals(ruleset_.Commit(busy)), ElementsAre(Refused{0, EBUSY}, Refused{1, EBUSY}));

  NftBatch in_order = Batch();
  in_order.DeleteRule(kNfprotoInet, kTable, "c", rules[0].handle);
  in_order.DeleteRule(kNfprotoInet, kTable, "c", rules[1].handle);
  in_order.DeleteChain("target");
  in_order.DeleteSet("s");
  EXPECT_TRUE(Refusals(ruleset_.Commit(in_order)).empty());
  EXPECT_EQ(*(*reader)->Set("s"), std::nullopt);
  EXPECT_TRUE((*(*reader)->Rules("c")).empty());
}

// A batch built on a generation another commit has passed is refused whole.
TEST_F(FakeRulesetTest, StaleGenerationRefusesTheWholeBatch) {
  const uint32_t generation = ruleset_.generation();
  ruleset_.ConcurrentWrite([](FakeRuleset& r) {
    NftBatch other = Batch();
    other.ChangeElements(Change(ElementVerb::kAdd, "s", {2, 2, 2, 2}));
    ASSERT_TRUE(Refusals(r.Commit(other)).empty());
  });
  NftBatch b = Batch();
  b.ChangeElements(Change(ElementVerb::kAdd, "s", {1, 1, 1, 1}));
  const auto sent = ruleset_.Commit(b, generation);
  ASSERT_FALSE(sent.ok());
  EXPECT_TRUE(IsStaleGeneration(sent.error())) << sent.error().msg;
  const auto elements = Elements("s");
  ASSERT_EQ(elements.size(), 1u);
  EXPECT_EQ(elements[0].key, (Bytes{2, 2, 2, 2}));  // the other writer's only
  EXPECT_TRUE(Refusals(ruleset_.Commit(b, ruleset_.generation())).empty());
  EXPECT_EQ(Elements("s").size(), 2u);
}

TEST_F(FakeRulesetTest, FaultsFailTheirCallOnly) {
  ruleset_.FailOperation(FakeRuleset::kElements, 2);
  EXPECT_TRUE(ruleset_.OpenTable(kNfprotoInet, kTable).value()->Elements("s").ok());
  const auto failed = ruleset_.OpenTable(kNfprotoInet, kTable).value()->Elements("s");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, kErrKernel);
  EXPECT_THAT(failed.error().msg, HasSubstr("injected fault"));

  const std::string before = ruleset_.Dump();
  NftBatch b = Batch();
  b.ChangeElements(Change(ElementVerb::kAdd, "s", {3, 3, 3, 3}));
  ruleset_.RefuseCommit(EPERM);
  EXPECT_THAT(Refusals(ruleset_.Commit(b)), ElementsAre(Refused{0, EPERM}));
  ruleset_.FailOperation(FakeRuleset::kCommit);
  EXPECT_FALSE(ruleset_.Commit(b).ok());
  EXPECT_EQ(ruleset_.Dump(), before);
  EXPECT_TRUE(Refusals(ruleset_.Commit(b)).empty());
  EXPECT_NE(ruleset_.Dump(), before);
}

}  // namespace
}  // namespace nodegate::netfilter::testing
