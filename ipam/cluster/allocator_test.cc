// cluster-ipam's verbs against etcd's semantics in memory (testing/fake_kv.h): allocation,
// claims, borrowing, exhaustion, idempotency, release, races on cue, GC, CHECK, STATUS, and
// stored values that are not ours. The same verbs against three real etcd members:
// tests/cluster_ipam/.
#include "ipam/cluster/allocator.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "ipam/cluster/testing/fake_kv.h"

namespace nodegate::ipam::cluster {
namespace {

using testing::FakeKv;

net::IpPrefix P(const char* text) { return *net::IpPrefix::Parse(text); }

ClusterConfig Config(const std::string& node, std::vector<std::pair<const char*, int>> sets,
                     bool strict = false) {
  ClusterConfig cfg;
  cfg.cni_version = "1.1.0";
  cfg.network_name = "net1";
  cfg.node_name = node;
  cfg.strict_affinity = strict;
  for (const auto& [subnet, block_size] : sets) {
    cfg.pool.sets.push_back(
        {*CanonicalizeRangeSet({RangeSpec{.subnet = P(subnet)}}), {block_size}});
  }
  return cfg;
}

std::vector<std::string> Ips(const std::vector<AddressInRange>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) out.push_back(a.ip.ToString());
  return out;
}

class AllocatorTest : public ::testing::Test {
 protected:
  Result<std::vector<AddressInRange>> Add(const ClusterConfig& cfg, const std::string& id,
                                          const std::string& ifname = "eth0") {
    Allocator allocator(kv_, cfg);
    return allocator.Add(id, ifname);
  }
  Status Del(const ClusterConfig& cfg, const std::string& id, const std::string& ifname = "eth0") {
    Allocator allocator(kv_, cfg);
    return allocator.Release(id, ifname);
  }
  std::vector<std::string> KeysUnder(const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& [key, kv] : kv_.Dump()) {
      if (key.rfind(prefix, 0) == 0) out.push_back(key);
    }
    return out;
  }
  Block BlockAt(const std::string& key) { return *DecodeBlock(key, kv_.Get(key)->value); }

  FakeKv kv_;
  const Keys keys_{"/nodegate/ipam", "net1"};
};

TEST_F(AllocatorTest, FirstAddWritesPoolClaimBlockHandleAndIndexTogether) {
  const ClusterConfig cfg = Config("node-1", {{"10.244.0.0/16", 26}});
  auto added = Add(cfg, "c1");
  ASSERT_TRUE(added.ok()) << added.error().msg;
  ASSERT_EQ(added->size(), 1u);
  const net::IpPrefix block = BlockOf(added->front().ip, 26);
  EXPECT_TRUE(Usable(cfg.pool.sets[0].range_set.ranges[0], added->front().ip));
  EXPECT_EQ(added->front().range, &cfg.pool.sets[0].range_set.ranges[0]);

  ASSERT_TRUE(kv_.Get(keys_.Pool()).has_value());
  EXPECT_TRUE(SamePool(*DecodePool("", kv_.Get(keys_.Pool())->value), cfg.pool));
  auto claim = DecodeClaim("", kv_.Get(keys_.Claim(block))->value);
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->node, "node-1");
  const Block b = BlockAt(keys_.NodeBlock("node-1", block));
  ASSERT_EQ(b.allocations.size(), 1u);
  const auto& [ordinal, entry] = *b.allocations.begin();
  EXPECT_EQ(AddressAt(block, ordinal), added->front().ip);
  EXPECT_EQ(entry.handle, "c1/eth0");
  const Handle h = *DecodeHandle("", kv_.Get(keys_.Handle("c1", "eth0"))->value);
  EXPECT_EQ(h.aid, entry.aid);
  EXPECT_EQ(h.node, "node-1");
  EXPECT_EQ(h.addresses[0].ip, added->front().ip);
  EXPECT_EQ(kv_.Get(keys_.NodeHandle("node-1", "c1", "eth0"))->value, h.aid);
}

TEST_F(AllocatorTest, AddIsIdempotentAndWritesNothingTheSecondTime) {
  const ClusterConfig cfg = Config("node-1", {{"10.244.0.0/16", 26}, {"fd00:244::/48", 122}});
  auto first = Add(cfg, "c1");
  ASSERT_TRUE(first.ok()) << first.error().msg;
  const int64_t revision = kv_.revision();
  auto second = Add(cfg, "c1");
  ASSERT_TRUE(second.ok()) << second.error().msg;
  EXPECT_EQ(Ips(*first), Ips(*second));
  EXPECT_EQ(kv_.revision(), revision);
  ASSERT_EQ(first->size(), 2u);
  EXPECT_TRUE(first->at(0).ip.is_v4());
  EXPECT_FALSE(first->at(1).ip.is_v4());
  // Another interface of the same container is another attachment.
  auto other = Add(cfg, "c1", "net1");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(Ips(*other), Ips(*first));
}

TEST_F(AllocatorTest, FullBlockClaimsAnotherAndNodesNeverShareABlock) {
  const ClusterConfig a = Config("node-a", {{"10.9.0.0/24", 28}});
  const ClusterConfig b = Config("node-b", {{"10.9.0.0/24", 28}});
  std::set<std::string> seen;
  for (int i = 0; i < 40; ++i) {
    auto r = Add(i % 2 ? a : b, "c" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().msg;
    EXPECT_TRUE(seen.insert(r->front().ip.ToString()).second) << r->front().ip.ToString();
  }
  // 20 each: 2 blocks of /28 each (16, or 14-15 at the range's ends).
  const auto claims_a = KeysUnder(keys_.NodeBlocksPrefix("node-a"));
  const auto claims_b = KeysUnder(keys_.NodeBlocksPrefix("node-b"));
  EXPECT_EQ(claims_a.size(), 2u);
  EXPECT_EQ(claims_b.size(), 2u);
  std::set<std::string> blocks;
  for (const auto& key : KeysUnder(keys_.ClaimsPrefix())) blocks.insert(key);
  EXPECT_EQ(blocks.size(), 4u);
  for (const auto& key : claims_a) {
    const Block blk = BlockAt(key);
    EXPECT_EQ(DecodeClaim("", kv_.Get(keys_.Claim(blk.block))->value)->node, "node-a");
  }
}

TEST_F(AllocatorTest, BorrowsWhenNoBlockIsFreeUnlessStrict) {
  // One /28 block: node-a claims it, node-b can only borrow.
  const ClusterConfig a = Config("node-a", {{"10.7.0.0/28", 28}});
  const ClusterConfig b = Config("node-b", {{"10.7.0.0/28", 28}});
  const ClusterConfig b_strict = Config("node-b", {{"10.7.0.0/28", 28}}, /*strict=*/true);
  ASSERT_TRUE(Add(a, "a1").ok());
  auto strict = Add(b_strict, "b1");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().code, kErrAddressExhausted);
  EXPECT_NE(strict.error().details.find("strictAffinity"), std::string::npos);
  EXPECT_FALSE(kv_.Get(keys_.Handle("b1", "eth0")).has_value());

  Allocator borrower(kv_, b);
  auto borrowed = borrower.Add("b1", "eth0");
  ASSERT_TRUE(borrowed.ok()) << borrowed.error().msg;
  EXPECT_EQ(borrower.counters().borrowed, 1);
  const Block blk = BlockAt(keys_.NodeBlock("node-a", P("10.7.0.0/28")));
  EXPECT_EQ(blk.node, "node-a");
  const auto entry = blk.allocations.at(OrdinalOf(blk.block, borrowed->front().ip));
  EXPECT_EQ(entry.node, "node-b");
  EXPECT_EQ(entry.handle, "b1/eth0");
  const Handle h = *DecodeHandle("", kv_.Get(keys_.Handle("b1", "eth0"))->value);
  EXPECT_EQ(h.addresses[0].block_node, "node-a");
  EXPECT_TRUE(kv_.Get(keys_.NodeHandle("node-b", "b1", "eth0")).has_value());
  // The borrowed address is released from the lender's block.
  ASSERT_TRUE(Del(b, "b1").ok());
  EXPECT_EQ(BlockAt(keys_.NodeBlock("node-a", P("10.7.0.0/28"))).allocations.size(), 1u);
}

TEST_F(AllocatorTest, ExhaustionIsACleanErrorThatWritesNothing) {
  const ClusterConfig cfg = Config("n1", {{"10.6.0.0/29", 29}});  // .1 gateway, .2-.6 usable
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Add(cfg, "c" + std::to_string(i)).ok()) << i;
  const auto before = kv_.Dump();
  auto full = Add(cfg, "c5");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, kErrAddressExhausted);
  EXPECT_EQ(full.error().msg, "no IP addresses available in range set: 10.6.0.1-10.6.0.6");
  EXPECT_EQ(kv_.Dump(), before);
  Allocator status(kv_, cfg);
  EXPECT_EQ(status.Availability().error().code, kErrPluginNotAvailable);
  ASSERT_TRUE(Del(cfg, "c2").ok());
  EXPECT_TRUE(status.Availability().ok());
  EXPECT_TRUE(Add(cfg, "c5").ok());
}

TEST_F(AllocatorTest, ReleaseIsIdempotentAndLeavesOthers) {
  const ClusterConfig cfg = Config("n1", {{"10.5.0.0/24", 26}});
  auto one = Add(cfg, "c1");
  auto two = Add(cfg, "c2");
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_TRUE(Del(cfg, "c1").ok());
  ASSERT_TRUE(Del(cfg, "c1").ok());
  ASSERT_TRUE(Del(cfg, "never").ok());
  EXPECT_FALSE(kv_.Get(keys_.Handle("c1", "eth0")).has_value());
  EXPECT_FALSE(kv_.Get(keys_.NodeHandle("n1", "c1", "eth0")).has_value());
  const Block blk = BlockAt(KeysUnder(keys_.NodeBlocksPrefix("n1")).front());
  ASSERT_EQ(blk.allocations.size(), 1u);
  EXPECT_EQ(blk.allocations.begin()->second.handle, "c2/eth0");
  // The next address is the one after the last taken, not the one just freed.
  auto three = Add(cfg, "c3");
  ASSERT_TRUE(three.ok());
  EXPECT_NE(three->front().ip, one->front().ip);
}

// The release-versus-reuse race: a releaser reads the handle, the address is released and
// taken again by another attachment, then the stale releaser writes. The block's compare and
// the allocation id keep the new owner's entry.
TEST_F(AllocatorTest, AStaleReleaseNeverFreesAnAddressTakenAgain) {
  const ClusterConfig cfg = Config("n1", {{"10.4.0.0/29", 29}});
  ASSERT_TRUE(Add(cfg, "old").ok());
  const std::string old_handle = kv_.Get(keys_.Handle("old", "eth0"))->value;
  // Free the whole range but the old one's address, so the re-ADD lands on it.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Add(cfg, "f" + std::to_string(i)).ok());
  ASSERT_TRUE(Del(cfg, "old").ok());
  auto taker = Add(cfg, "new");
  ASSERT_TRUE(taker.ok());
  const Handle old = *DecodeHandle("", old_handle);
  EXPECT_EQ(taker->front().ip, old.addresses[0].ip);
  // Put the stale handle back (a restore of an old backup, or a reader that saw it) and DEL it.
  kv_.Put(keys_.Handle("old", "eth0"), old_handle);
  ASSERT_TRUE(Del(cfg, "old").ok());
  const Block blk = BlockAt(KeysUnder(keys_.NodeBlocksPrefix("n1")).front());
  EXPECT_EQ(blk.allocations.at(OrdinalOf(blk.block, taker->front().ip)).handle, "new/eth0");
}

TEST_F(AllocatorTest, ConcurrentWriterOnCueCausesARetryNotADuplicate) {
  const ClusterConfig cfg = Config("n1", {{"10.3.0.0/24", 26}});
  ASSERT_TRUE(Add(cfg, "warm").ok());
  std::string other_ip;
  // Between this ADD's read and its transaction, another ADD of the node takes the same slot.
  kv_.before_txn = [&] {
    Allocator other(kv_, cfg);
    auto r = other.Add("racer", "eth0");
    ASSERT_TRUE(r.ok()) << r.error().msg;
    other_ip = r->front().ip.ToString();
  };
  Allocator mine(kv_, cfg);
  auto r = mine.Add("me", "eth0");
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(mine.counters().conflicts, 1);
  EXPECT_NE(r->front().ip.ToString(), other_ip);
  EXPECT_EQ(BlockAt(KeysUnder(keys_.NodeBlocksPrefix("n1")).front()).allocations.size(), 3u);
}

TEST_F(AllocatorTest, ManyThreadsOfManyNodesNeverShareAnAddress) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::string> seen;
  int duplicates = 0, failures = 0;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const ClusterConfig cfg = Config("node-" + std::to_string(t % 4), {{"10.2.0.0/22", 28}});
      for (int i = 0; i < 25; ++i) {
        auto r = Add(cfg, "t" + std::to_string(t) + "-" + std::to_string(i));
        std::lock_guard lock(mu);
        if (!r.ok()) {
          ++failures;
          continue;
        }
        if (!seen.insert(r->front().ip.ToString()).second) ++duplicates;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(seen.size(), 200u);
}

TEST_F(AllocatorTest, AStoredPoolThatDiffersIsRefusedAndNothingWritten) {
  ASSERT_TRUE(Add(Config("n1", {{"10.1.0.0/16", 26}}), "c1").ok());
  const auto before = kv_.Dump();
  auto r = Add(Config("n2", {{"10.1.0.0/16", 24}}), "c2");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kErrInvalidConfig);
  EXPECT_NE(r.error().details.find("blockSize 26"), std::string::npos) << r.error().details;
  EXPECT_EQ(kv_.Dump(), before);
}

TEST_F(AllocatorTest, StoredValuesNotOursFailTheVerbAndChangeNothing) {
  const ClusterConfig cfg = Config("n1", {{"10.1.0.0/24", 26}});
  ASSERT_TRUE(Add(cfg, "c1").ok());
  const std::string block_key = KeysUnder(keys_.NodeBlocksPrefix("n1")).front();
  for (const char* junk : {"{\"format\":1}", "\xff\xfe",
                           "{\"format\":1,\"block\":\"10.9.0.0/26\","
                           "\"node\":\"n1\",\"next\":0,\"allocations\":{}}"}) {
    kv_.Put(block_key, junk);
    const auto before = kv_.Dump();
    auto r = Add(cfg, "c2");
    ASSERT_FALSE(r.ok()) << junk;
    EXPECT_EQ(r.error().code, kErrStoreCorrupt) << r.error().msg;
    EXPECT_EQ(kv_.Dump(), before);
  }
  kv_.Put(keys_.Handle("c1", "eth0"), "[]");
  auto del = Del(cfg, "c1");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, kErrStoreCorrupt);
}

TEST_F(AllocatorTest, UnreachableStoreIsTryAgainLaterAndLeavesNothing) {
  const ClusterConfig cfg = Config("n1", {{"10.1.0.0/24", 26}});
  kv_.fail_next = 1;
  auto r = Add(cfg, "c1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kErrTryAgainLater);
  EXPECT_TRUE(kv_.Dump().empty());
  kv_.fail_next = 1;
  EXPECT_EQ(Del(cfg, "c1").error().code, kErrTryAgainLater);
  EXPECT_TRUE(Add(cfg, "c1").ok());
}

TEST_F(AllocatorTest, GcReleasesWhatIsNotLiveAndOrphanEntries) {
  const ClusterConfig cfg = Config("n1", {{"10.8.0.0/24", 26}});
  const ClusterConfig other = Config("n2", {{"10.8.0.0/24", 26}});
  for (const char* id : {"live1", "dead1", "live2", "dead2"}) ASSERT_TRUE(Add(cfg, id).ok());
  ASSERT_TRUE(Add(cfg, "live1", "net1").ok());
  ASSERT_TRUE(Add(other, "elsewhere").ok());
  // An entry whose handle is gone (a hand edit).
  const std::string block_key = KeysUnder(keys_.NodeBlocksPrefix("n1")).front();
  Block blk = BlockAt(block_key);
  blk.allocations[60] = {"ghost/eth0", "0123456789abcdef", ""};
  kv_.Put(block_key, EncodeBlock(blk));

  Allocator gc(kv_, cfg);
  ASSERT_TRUE(gc.Gc({{"live1", ""}, {"live2", "eth0"}}).ok());
  EXPECT_TRUE(kv_.Get(keys_.Handle("live1", "eth0")).has_value());
  EXPECT_TRUE(kv_.Get(keys_.Handle("live1", "net1")).has_value());
  EXPECT_TRUE(kv_.Get(keys_.Handle("live2", "eth0")).has_value());
  EXPECT_FALSE(kv_.Get(keys_.Handle("dead1", "eth0")).has_value());
  EXPECT_FALSE(kv_.Get(keys_.Handle("dead2", "eth0")).has_value());
  EXPECT_TRUE(kv_.Get(keys_.Handle("elsewhere", "eth0")).has_value());  // another node's
  blk = BlockAt(block_key);
  EXPECT_EQ(blk.allocations.size(), 3u);
  EXPECT_FALSE(blk.allocations.count(60));
}

TEST_F(AllocatorTest, CheckConfirmsTheHandleAgainstTheResult) {
  const ClusterConfig cfg = Config("n1", {{"10.8.0.0/24", 26}});
  auto added = Add(cfg, "c1");
  ASSERT_TRUE(added.ok());
  Allocator check(kv_, cfg);
  cni::CniResult result;
  result.ips.push_back({std::nullopt, net::IpPrefix(added->front().ip, 24), std::nullopt});
  result.ips.push_back({std::nullopt, P("192.0.2.5/24"), std::nullopt});  // not ours
  EXPECT_TRUE(check.Check("c1", "eth0", result).ok());
  EXPECT_TRUE(check.Check("c1", "eth0", std::nullopt).ok());
  result.ips[0].address = P("10.8.0.200/24");
  EXPECT_EQ(check.Check("c1", "eth0", result).error().code, kErrCheckFailed);
  EXPECT_EQ(check.Check("c2", "eth0", std::nullopt).error().code, kErrCheckFailed);
}

TEST_F(AllocatorTest, PartialHandleIsCompleted) {
  // A handle holding only its IPv4 address (an import from a single-stack host-local).
  const ClusterConfig v4 = Config("n1", {{"10.8.0.0/24", 26}});
  auto first = Add(v4, "c1");
  ASSERT_TRUE(first.ok());
  kv_.Put(keys_.Pool(), EncodePool(Config("n1", {{"10.8.0.0/24", 26}, {"fd00:8::/64", 122}}).pool,
                                   "2026-12-06T05:00:00Z"));
  const ClusterConfig dual = Config("n1", {{"10.8.0.0/24", 26}, {"fd00:8::/64", 122}});
  auto second = Add(dual, "c1");
  ASSERT_TRUE(second.ok()) << second.error().msg;
  ASSERT_EQ(second->size(), 2u);
  EXPECT_EQ(second->at(0).ip, first->front().ip);
  EXPECT_FALSE(second->at(1).ip.is_v4());
}

}  // namespace
}  // namespace nodegate::ipam::cluster

namespace nodegate::ipam::cluster {
namespace {

// Passes every request on, counting them.
class CountingKv : public etcd::Kv {
 public:
  explicit CountingKv(etcd::Kv& kv) : kv_(kv) {}
  Result<etcd::RangeResponse> Range(const etcd::RangeRequest& request) override {
    ++requests;
    return kv_.Range(request);
  }
  Result<etcd::TxnResponse> Txn(const etcd::TxnRequest& request) override {
    ++requests;
    return kv_.Txn(request);
  }
  int requests = 0;

 private:
  etcd::Kv& kv_;
};

TEST_F(AllocatorTest, TheAgentsCachedViewSavesTheReadAndAStaleOneCostsOneRetry) {
  const ClusterConfig a = Config("node-a", {{"10.7.0.0/26", 28}});
  ViewCache cache;
  CountingKv counting(kv_);
  Counters last;
  auto add = [&](const std::string& id) {
    Allocator allocator(counting, a);
    allocator.set_view_cache(&cache);
    auto out = allocator.Add(id, "eth0");
    last = allocator.counters();
    return out;
  };
  auto del = [&](const std::string& id) {
    Allocator allocator(counting, a);
    allocator.set_view_cache(&cache);
    return allocator.Release(id, "eth0");
  };
  ASSERT_TRUE(add("a0").ok());  // read, claim, read, commit: and the view is kept
  EXPECT_EQ(cache.size(), 1u);
  counting.requests = 0;
  auto a1 = add("a1");
  ASSERT_TRUE(a1.ok()) << a1.error().msg;
  EXPECT_EQ(counting.requests, 1);  // the transaction alone
  // A DEL keeps the view current: the next ADD is one request again.
  ASSERT_TRUE(del("a1").ok());
  counting.requests = 0;
  auto a2 = add("a2");
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(counting.requests, 1);
  EXPECT_EQ(last.conflicts, 0);
  // A repeated ADD: the compare that its handle is absent fails and brings the handle back.
  auto again = add("a2");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Ips(*again), Ips(*a2));
  EXPECT_EQ(KeysUnder(keys_.Handle("a2", "")).size(), 1u);
  EXPECT_EQ(last.conflicts, 1);
  // The node's block written by someone else (a plugin working directly): the stale view's
  // compare fails once, its failure branch brings the block, and the address is a new one.
  ASSERT_TRUE(add("a2b").ok());  // (the repeated ADD wrote nothing, and kept no view)
  EXPECT_EQ(cache.size(), 1u);
  ASSERT_TRUE(Add(a, "direct").ok());
  auto a3 = add("a3");
  ASSERT_TRUE(a3.ok());
  EXPECT_EQ(last.conflicts, 1);
  std::set<std::string> seen;
  for (const auto& key : KeysUnder(keys_.HandlesPrefix())) {
    const Handle h = *DecodeHandle("", kv_.Get(key)->value);
    for (const auto& address : h.addresses) {
      EXPECT_TRUE(seen.insert(address.ip.ToString()).second)
          << "duplicate " << address.ip.ToString();
    }
  }
  EXPECT_EQ(seen.size(), 5u);  // a0, a2, a2b, direct, a3
  // Fill the block and beyond: a claim on the way, from the cached view.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(add("f" + std::to_string(i)).ok());
  EXPECT_EQ(KeysUnder(keys_.NodeBlocksPrefix("node-a")).size(), 2u);
}

}  // namespace
}  // namespace nodegate::ipam::cluster
