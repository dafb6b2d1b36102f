// What one pod with 2,000 UDP host ports costs in nft mode, counted rather than timed (issue
// 32 item 4): the ADD is one batch of 6,134 NEWRULE messages, nine tenths of its time is the
// kernel's, and the rest is ours. Ours: each rule's message is written once, in place, with
// about one heap allocation (the rule's text is made only for an error; before, every Append
// printed the rule and encoded it into vectors first: 23 allocations a rule here).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <new>

#include "lib/sys/netns.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/testing/iptables_nft_kinds.h"
#include "tests/support/netns_fixture.h"

namespace {
std::atomic<size_t> g_allocations{0};
}  // namespace

// Every allocation of this test program is counted (the array and nothrow forms call these).
void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace nodegate::portmap::testing {
namespace {

TEST(IptablesNftCost, TwoThousandUdpPortsAllocateAboutOnceARule) {
  NG_REQUIRE_ROOT();
  nodegate::testing::TestNetns ns("ng-nft-cost");
  Config config = KindsConfig("ctr1");
  for (int i = 0; i < 2000; ++i) config.mappings.push_back(Mapping(20000 + i, 53, Protocol::kUdp));
  const ipt::Plan plan = ipt::BuildPlan(config, net::Family::kV4);
  ASSERT_EQ(plan.container_rules.size(), 6000u);
  ASSERT_EQ(plan.entry_rules.size(), 134u);

  auto scope = sys::NetnsScope::Enter(ns.path());
  ASSERT_TRUE(scope.ok());
  auto table = ipt::NftNatTable::Open(net::Family::kV4);
  ASSERT_TRUE(table.ok()) << table.error().msg;
  for (const auto& chain :
       {std::string(ipt::kSetMarkChain), std::string(ipt::kDnatChain), plan.container_chain}) {
    ASSERT_TRUE((*table)->CreateChain(chain).ok());
  }
  const size_t before = g_allocations.load();
  for (const auto& rule : plan.container_rules) {
    ASSERT_TRUE((*table)->Append(plan.container_chain, rule).ok());
  }
  for (const auto& rule : plan.entry_rules) {
    ASSERT_TRUE((*table)->Append(ipt::kDnatChain, rule).ok());
  }
  const size_t allocations = g_allocations.load() - before;
  const size_t rules = plan.container_rules.size() + plan.entry_rules.size();
  EXPECT_LE(allocations, rules * 3 / 2) << allocations << " allocations for " << rules << " rules";
  std::cout << allocations << " allocations for " << rules << " rules\n";

  const Status committed = (*table)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.error().msg;
  const auto saved = ns.MustRun("iptables-nft-save -t nat | grep -c -- '-A " +
                                plan.container_chain + " .*-m udp --dport'");
  EXPECT_EQ(saved, "6000\n");
}

}  // namespace
}  // namespace nodegate::portmap::testing
