// The shaper on the in-memory kernel of lib/tc/testing/fake_kernel.h: what ADD makes and CHECK
// finds, a failure at each later step leaving the node as it was (a new ifb deleted, a replaced
// root and ingress hook put back), refusals of what is not ours, and DEL's idempotence. The
// same on the kernel, read back with `tc`, is tests/bandwidth/'s.
#include "plugins/bandwidth/shaper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "lib/tc/testing/fake_kernel.h"

namespace nodegate::bandwidth {
namespace {

using tc::testing::FakeKernel;
using ::testing::HasSubstr;

const tc::PschedClock kClock;  // 15.625 ticks/us, as /proc/net/psched says on current kernels
const Attachment kAttachment{.network = "rnet", .container_id = "ctr1", .ifname = "eth0"};
constexpr char kIfb[] = "bwp6ef8579d92ac";  // IfbName("rnet", "ctr1")

ShapingPlan PlanOf(SubnetMode mode = SubnetMode::kAll, uint64_t egress_bits = 2000000,
                   std::vector<std::string> subnets = {}) {
  BandwidthConfig c;
  c.ingress = {.rate_bits = 1000000, .burst_bits = 1000000};
  c.egress = {.rate_bits = egress_bits, .burst_bits = 500000};
  c.subnet_mode = mode;
  for (const auto& s : subnets) c.subnets.push_back(net::IpPrefix::Parse(s)->Masked());
  return BuildPlan(c, kAttachment, kClock);
}

class Shaper : public ::testing::Test {
 protected:
  FakeKernel kernel_;
  const netlink::LinkInfo veth_ = kernel_.AddDevice("veth1", "veth");
};

TEST_F(Shaper, ApplyMakesThePlanOnceAndCheckFindsIt) {
  auto ifb = ApplyPlan(kernel_, PlanOf(), veth_);
  ASSERT_TRUE(ifb.ok()) << ifb.error().msg;
  ASSERT_TRUE(ifb->has_value());
  const std::string redirect = "ifindex " + std::to_string((*ifb)->index);
  EXPECT_EQ(kernel_.Dump(),
            "dev veth1 kind veth mtu 1500 up\n"
            "  qdisc tbf 1: parent root rate 125000B/s buffer 15625000 ticks limit 128125B\n"
            "  qdisc ingress ffff: parent ingress\n"
            "  filter u32 parent ffff: pref 1 protocol all match 00000000/00000000 at 0 flowid "
            "1:1 action mirred egress redirect " +
                redirect +
                " stolen\n"
                "dev bwp6ef8579d92ac kind ifb mtu 1500 up alias \"nodegate/bandwidth rnet ctr1 "
                "eth0\"\n"
                "  qdisc tbf 1: parent root rate 250000B/s buffer 3906250 ticks limit 68750B\n");
  EXPECT_TRUE(CheckPlan(kernel_, PlanOf(), veth_).ok());
  // A repeated ADD finds everything in place and changes nothing.
  const int adds = kernel_.calls(FakeKernel::kAddQdisc) + kernel_.calls(FakeKernel::kAddFilter);
  ASSERT_TRUE(ApplyPlan(kernel_, PlanOf(), veth_).ok());
  EXPECT_EQ(kernel_.calls(FakeKernel::kAddQdisc) + kernel_.calls(FakeKernel::kAddFilter), adds);
}

// Each later step failing after the ifb was made: nothing of the ADD is left.
TEST_F(Shaper, FailureAfterTheIfbWasMadeLeavesNothing) {
  struct Case {
    std::string name;
    ShapingPlan plan;
    std::string operation;
    int nth;
  };
  const std::vector<Case> cases = {
      // add qdisc 1 is the ifb's root, 2 the veth's ingress qdisc, 3 the veth's root.
      {"ingress qdisc", PlanOf(), FakeKernel::kAddQdisc, 2},
      {"redirect filter", PlanOf(), FakeKernel::kAddFilter, 1},
      {"veth root", PlanOf(), FakeKernel::kAddQdisc, 3},
      {"HTB class", PlanOf(SubnetMode::kUnshaped, 2000000, {"198.51.100.0/24"}),
       FakeKernel::kAddClass, 1},
      {"HTB root filter", PlanOf(SubnetMode::kUnshaped, 2000000, {"198.51.100.0/24"}),
       FakeKernel::kAddFilter, 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeKernel kernel;
    const netlink::LinkInfo veth = kernel.AddDevice("veth1", "veth");
    const std::string before = kernel.Dump();
    kernel.FailOperation(c.operation, c.nth);
    auto add = ApplyPlan(kernel, c.plan, veth);
    ASSERT_FALSE(add.ok());
    EXPECT_THAT(add.error().msg, HasSubstr("injected fault"));
    EXPECT_EQ(kernel.Dump(), before);
  }
}

// A repeated ADD with a new egress rate fails at the veth's root: the ifb's old root and the
// veth's old objects are put back.
TEST_F(Shaper, FailedReAddPutsBackWhatWasThere) {
  ASSERT_TRUE(ApplyPlan(kernel_, PlanOf(SubnetMode::kAll, 2000000), veth_).ok());
  const std::string before = kernel_.Dump();
  // The veth's root: deleted, then added anew (HTB instead of TBF): the add fails.
  kernel_.FailOperation(FakeKernel::kAddQdisc, 2);
  auto add = ApplyPlan(kernel_, PlanOf(SubnetMode::kUnshaped, 4000000, {"198.51.100.0/24"}), veth_);
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(kernel_.Dump(), before);
}

// A foreign root qdisc is replaced by the plan's, and put back when a later step fails.
TEST_F(Shaper, ForeignRootIsPutBackWhenTheAddFails) {
  tc::Qdisc foreign;
  foreign.kind = "fq_codel";
  foreign.handle = tc::MakeHandle(0x8001, 0);
  ASSERT_TRUE(kernel_.AddQdisc(veth_.index, foreign, false).ok());
  const std::string before = kernel_.Dump();
  kernel_.FailOperation(FakeKernel::kAddQdisc, 3);  // the tbf that replaces it
  ASSERT_FALSE(ApplyPlan(kernel_, PlanOf(), veth_).ok());
  EXPECT_EQ(kernel_.Dump(), before);
}

TEST_F(Shaper, ForeignIngressQdiscIsRefusedAndNothingChanges) {
  tc::Qdisc clsact;
  clsact.kind = "clsact";
  clsact.handle = tc::kIngressHandle;
  clsact.parent = tc::kIngressParent;
  ASSERT_TRUE(kernel_.AddQdisc(veth_.index, clsact, false).ok());
  const std::string before = kernel_.Dump();
  auto add = ApplyPlan(kernel_, PlanOf(), veth_);
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.error().code, kErrKernel);
  EXPECT_THAT(add.error().msg, HasSubstr("has a clsact qdisc on its ingress hook"));
  EXPECT_EQ(kernel_.Dump(), before);
}

TEST_F(Shaper, DeviceHoldingTheIfbNameIsRefusedAndKept) {
  kernel_.AddDevice(kIfb, "dummy");
  const std::string before = kernel_.Dump();
  auto add = ApplyPlan(kernel_, PlanOf(), veth_);
  ASSERT_FALSE(add.ok());
  EXPECT_THAT(add.error().msg, HasSubstr("exists and is a dummy, not an ifb"));
  EXPECT_EQ(kernel_.Dump(), before);
}

// DEL removes only the plugin's objects, and a second DEL finds nothing to do.
TEST_F(Shaper, RemoveIsIdempotentAndKeepsOthersFilters) {
  ASSERT_TRUE(ApplyPlan(kernel_, PlanOf(), veth_).ok());
  tc::Filter other;
  other.pref = 10;
  other.keys = tc::MatchAllKeys();
  ASSERT_TRUE(kernel_.AddFilter(veth_.index, other).ok());

  for (int del = 1; del <= 2; ++del) {
    SCOPED_TRACE("DEL " + std::to_string(del));
    ASSERT_TRUE(RemoveHostObjects(kernel_, veth_.index).ok());
    ASSERT_TRUE(RetireIfb(kernel_, kIfb).ok());
    EXPECT_EQ(kernel_.Dump(),
              "dev veth1 kind veth mtu 1500 up\n"
              "  qdisc ingress ffff: parent ingress\n"
              "  filter u32 parent ffff: pref 10 protocol all match 00000000/00000000 at 0\n");
  }
  // Without the foreign filter, the ingress qdisc goes too.
  ASSERT_TRUE(kernel_.DeleteFilters(veth_.index, tc::kIngressHandle, 10, other.protocol).ok());
  ASSERT_TRUE(RemoveHostObjects(kernel_, veth_.index).ok());
  EXPECT_EQ(kernel_.Dump(), "dev veth1 kind veth mtu 1500 up\n");
}

// A DEL killed after retiring the ifb left it under its retired name: the next DEL deletes it.
TEST_F(Shaper, RetireIfbDeletesALeftRetiredIfb) {
  auto ifb = ApplyPlan(kernel_, PlanOf(), veth_);
  ASSERT_TRUE(ifb.ok() && ifb->has_value());
  ASSERT_TRUE(kernel_.RetireLink(**ifb, RetiredIfbName(kIfb)).ok());
  ASSERT_TRUE(RetireIfb(kernel_, kIfb).ok());
  EXPECT_FALSE(kernel_.Link(RetiredIfbName(kIfb)).has_value());
  EXPECT_FALSE(kernel_.Link(kIfb).has_value());
}

// CHECK names the first difference with code 103; each case changes one thing after ADD.
TEST_F(Shaper, CheckNamesTheFirstDifference) {
  struct Case {
    std::string name;
    std::function<void(FakeKernel&, const netlink::LinkInfo& veth, const netlink::LinkInfo& ifb)>
        change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"veth rate",
       [](FakeKernel& k, const netlink::LinkInfo& veth, const netlink::LinkInfo&) {
         tc::Qdisc root = PlanOf().host_root[0];
         root.tbf.rate_bytes *= 2;
         ASSERT_TRUE(k.AddQdisc(veth.index, root, true).ok());
       },
       "Rate doesn't match on veth1 (tbf 1:)"},
      {"ifb gone",
       [](FakeKernel& k, const netlink::LinkInfo&, const netlink::LinkInfo& ifb) {
         ASSERT_TRUE(k.DeleteLinkByIndex(ifb.index).ok());
       },
       "get ifb device: Link not found (bwp6ef8579d92ac)"},
      {"ifb mtu",
       [](FakeKernel& k, const netlink::LinkInfo&, const netlink::LinkInfo& ifb) {
         ASSERT_TRUE(k.UpdateLink(ifb, {.name = ifb.name, .mtu = 9000, .alias = ifb.alias}).ok());
       },
       "has mtu 9000, want 1500"},
      {"redirect",
       [](FakeKernel& k, const netlink::LinkInfo& veth, const netlink::LinkInfo&) {
         ASSERT_TRUE(k.DeleteFilters(veth.index, tc::kIngressHandle, kPrefIpv4, ETH_P_ALL).ok());
       },
       "Failed to find filter on veth1 ingress"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeKernel kernel;
    const netlink::LinkInfo veth = kernel.AddDevice("veth1", "veth");
    auto ifb = ApplyPlan(kernel, PlanOf(), veth);
    ASSERT_TRUE(ifb.ok() && ifb->has_value());
    ASSERT_TRUE(CheckPlan(kernel, PlanOf(), veth).ok());
    c.change(kernel, veth, **ifb);
    const Status check = CheckPlan(kernel, PlanOf(), veth);
    ASSERT_FALSE(check.ok());
    EXPECT_EQ(check.error().code, kErrCheckFailed);
    EXPECT_THAT(check.error().msg, HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace nodegate::bandwidth
