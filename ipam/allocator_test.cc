// The allocator and the verbs against the fake store: allocation order, requested
// addresses, exhaustion, rollback, idempotent ADD, DEL's legacy passes, CHECK, GC, STATUS.
#include "ipam/allocator.h"

#include <gtest/gtest.h>

#include "ipam/plugin.h"
#include "ipam/testing/fake_store.h"

namespace nodegate::ipam {
namespace {

using testing::FakeStore;
using testing::Ip;

IpamConfig Config(const std::string& ipam_json, const std::string& extra = "",
                  const std::string& cni_args = "") {
  auto conf = cni::ParseNetConf(R"({"cniVersion":"1.0.0","name":"net1",)" + extra + R"("ipam":)" +
                                ipam_json + "}");
  EXPECT_TRUE(conf.ok());
  auto cfg = LoadIpamConfig(*conf, cni_args, Verb::kAdd);
  EXPECT_TRUE(cfg.ok()) << cfg.error().msg;
  return *cfg;
}

const char* kSmall = R"({"ranges":[[{"subnet":"10.5.0.0/29","rangeStart":"10.5.0.2",
    "rangeEnd":"10.5.0.5","gateway":"10.5.0.3"}]]})";
const char* kDual = R"({"ranges":[[{"subnet":"10.5.0.0/29","rangeStart":"10.5.0.2",
    "rangeEnd":"10.5.0.5","gateway":"10.5.0.3"}],[{"subnet":"2001:db8::/120"}]]})";

Owner O(const std::string& id, const std::string& ifname = "eth0") { return Owner{id, ifname}; }

std::string AddOne(const IpamConfig& cfg, const Owner& owner, FakeStore& store) {
  auto got = AllocateAll(cfg, owner, store);
  if (!got.ok()) return "error: " + got.error().msg;
  std::string out;
  for (const auto& a : got.value()) out += (out.empty() ? "" : " ") + a.ip.ToString();
  return out;
}

TEST(AllocatorTest, ObservedReferenceOrder) {
  // Reference, observed: allocations .2, .4, .5; after DEL of .2 the next ADD wraps to .2.
  FakeStore store;
  auto cfg = Config(kSmall);
  EXPECT_EQ(AddOne(cfg, O("a"), store), "10.5.0.2");
  EXPECT_EQ(AddOne(cfg, O("b"), store), "10.5.0.4");
  EXPECT_EQ(AddOne(cfg, O("c"), store), "10.5.0.5");
  ASSERT_TRUE(DelWith(cfg, O("a"), store).ok());
  EXPECT_EQ(AddOne(cfg, O("d"), store), "10.5.0.2");
  auto full = AllocateAll(cfg, O("e"), store);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, kErrAddressExhausted);
  EXPECT_EQ(full.error().msg,
            "failed to allocate for range 0: no IP addresses available in range set: "
            "10.5.0.2-10.5.0.5");
}

TEST(AllocatorTest, RequestedAddresses) {
  FakeStore store;
  auto ok = AllocateAll(Config(kSmall, "", "IP=10.5.0.5"), O("a"), store);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value()[0].ip, Ip("10.5.0.5"));
  EXPECT_EQ(store.last_reserved[0], Ip("10.5.0.5"));  // requested IPs move the cursor too

  auto gw = AllocateAll(Config(kSmall, "", "IP=10.5.0.3"), O("b"), store);
  ASSERT_FALSE(gw.ok());
  EXPECT_EQ(gw.error().msg,
            "failed to allocate for range 0: requested ip 10.5.0.3 is subnet's gateway");

  auto taken = AllocateAll(Config(kSmall, "", "IP=10.5.0.5"), O("b"), store);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code, kErrAddressInUse);
  EXPECT_EQ(taken.error().msg,
            "failed to allocate for range 0: requested IP address 10.5.0.5 is not available in "
            "range set 10.5.0.2-10.5.0.5");

  auto outside =
      AllocateAll(Config(kSmall, R"("args":{"cni":{"ips":["10.5.0.9"]}},)"), O("b"), store);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().msg, "failed to allocate all requested IPs: 10.5.0.9");
  EXPECT_EQ(store.reservations.size(), 1u) << "the failed ADD must release what it reserved";
}

TEST(AllocatorTest, DualStackAndRollbackOfThisCallOnly) {
  FakeStore store;
  auto cfg = Config(kDual);
  EXPECT_EQ(AddOne(cfg, O("a"), store), "10.5.0.2 2001:db8::2");
  // Fill the v6 set except nothing; make v6 fail with a taken requested address.
  auto fail = AllocateAll(Config(kDual, "", "IP=2001:db8::2"), O("b"), store);
  ASSERT_FALSE(fail.ok());
  EXPECT_EQ(fail.error().msg,
            "failed to allocate for range 1: requested IP address 2001:db8::2 is not available "
            "in range set 2001:db8::1-2001:db8::ff");
  EXPECT_EQ(store.reservations.size(), 2u);           // b's v4 reservation was rolled back
  EXPECT_EQ(store.last_reserved[0], Ip("10.5.0.4"));  // as the reference: cursor moved anyway
}

TEST(AllocatorTest, IdempotentAdd) {
  FakeStore store;
  auto cfg = Config(kDual);
  EXPECT_EQ(AddOne(cfg, O("a"), store), "10.5.0.2 2001:db8::2");
  EXPECT_EQ(AddOne(cfg, O("a"), store), "10.5.0.2 2001:db8::2");
  EXPECT_EQ(store.reservations.size(), 2u);
  // Another interface of the same container is another owner.
  EXPECT_EQ(AddOne(cfg, O("a", "net1"), store), "10.5.0.4 2001:db8::3");
  // Half an earlier ADD (killed after the first set): the retry completes it.
  ASSERT_TRUE(store.Release(O("a"), Ip("2001:db8::2")).ok());
  EXPECT_EQ(AddOne(cfg, O("a"), store), "10.5.0.2 2001:db8::4");
  // A different requested address than the one held is refused.
  auto other = AllocateAll(Config(kDual, "", "IP=10.5.0.5"), O("a"), store);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().msg,
            "failed to allocate for range 0: 10.5.0.2 has been allocated to a, duplicate "
            "allocation is not allowed");
}

TEST(AllocatorTest, LegacyOwnerBlocksDuplicate) {
  FakeStore store;
  store.reservations[Ip("10.5.0.4")] = Owner{"a", ""};
  auto got = AllocateAll(Config(kSmall), O("a"), store);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().msg,
            "failed to allocate for range 0: 10.5.0.4 has been allocated to a, duplicate "
            "allocation is not allowed");
}

TEST(AllocatorTest, ResultShape) {
  FakeStore store;
  auto cfg = Config(R"({"subnet":"10.9.0.0/16","routes":[{"dst":"0.0.0.0/0"}]})");
  auto result = AddWith(cfg, O("a"), store);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->ips.size(), 1u);
  EXPECT_EQ(result->ips[0].address.ToString(), "10.9.0.2/16");
  EXPECT_EQ(result->ips[0].gateway, Ip("10.9.0.1"));
  EXPECT_FALSE(result->ips[0].interface.has_value());
  ASSERT_EQ(result->routes.size(), 1u);
}

TEST(VerbsTest, DelReleasesExactThenLegacyPerPass) {
  auto one_set = Config(kSmall);
  auto two_sets = Config(kDual);
  {
    FakeStore store;
    store.reservations[Ip("10.5.0.2")] = O("a");
    store.reservations[Ip("10.5.0.4")] = Owner{"a", ""};
    store.reservations[Ip("10.5.0.5")] = O("b");
    ASSERT_TRUE(DelWith(one_set, O("a"), store).ok());
    // One pass: the exact match went, the legacy file stays (as the reference).
    EXPECT_EQ(store.reservations.size(), 2u);
    EXPECT_TRUE(store.reservations.count(Ip("10.5.0.4")));
    ASSERT_TRUE(DelWith(one_set, O("a"), store).ok());
    EXPECT_EQ(store.reservations.size(), 1u);
  }
  {
    FakeStore store;
    store.reservations[Ip("10.5.0.2")] = O("a");
    store.reservations[Ip("10.5.0.4")] = Owner{"a", ""};
    ASSERT_TRUE(DelWith(two_sets, O("a"), store).ok());  // pass 2 takes the legacy one
    EXPECT_TRUE(store.reservations.empty());
  }
  FakeStore empty;
  EXPECT_TRUE(DelWith(one_set, O("zzz"), empty).ok());
}

TEST(VerbsTest, CheckComparesPrevResult) {
  FakeStore store;
  auto cfg = Config(kDual);
  auto missing = CheckWith(cfg, O("a"), std::nullopt, store);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kErrCheckFailed);
  EXPECT_EQ(missing.error().msg, "host-local: Failed to find address added by container a");

  auto result = AddWith(cfg, O("a"), store);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(CheckWith(cfg, O("a"), *result, store).ok());
  EXPECT_TRUE(CheckWith(cfg, O("a"), std::nullopt, store).ok());
  // An address outside our ranges (another plugin's) is not ours to check.
  cni::CniResult foreign = *result;
  foreign.ips.push_back({std::nullopt, *net::IpPrefix::Parse("198.51.100.7/24"), std::nullopt});
  EXPECT_TRUE(CheckWith(cfg, O("a"), foreign, store).ok());
  // prevResult claims an address the container does not hold.
  cni::CniResult wrong = *result;
  wrong.ips[0].address = *net::IpPrefix::Parse("10.5.0.5/29");
  auto bad = CheckWith(cfg, O("a"), wrong, store);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().msg, "host-local: Failed to find address 10.5.0.5 added by container a");
}

TEST(VerbsTest, GcKeepsExactlyTheLiveAttachments) {
  FakeStore store;
  store.reservations[Ip("10.5.0.2")] = O("a");
  store.reservations[Ip("10.5.0.4")] = O("a", "net1");
  store.reservations[Ip("10.5.0.5")] = O("b");
  store.reservations[Ip("2001:db8::2")] = Owner{"c", ""};
  store.reservations[Ip("2001:db8::3")] = Owner{"d", ""};
  ASSERT_TRUE(GcWith({{"a", "eth0"}, {"c", "eth0"}}, store).ok());
  std::vector<net::IpAddress> left;
  for (const auto& [ip, o] : store.reservations) left.push_back(ip);
  EXPECT_EQ(left, (std::vector<net::IpAddress>{Ip("10.5.0.2"), Ip("2001:db8::2")}));
  ASSERT_TRUE(GcWith({}, store).ok());  // an empty list releases everything
  EXPECT_TRUE(store.reservations.empty());
}

TEST(VerbsTest, StatusReportsAFullRangeSet) {
  FakeStore store;
  auto cfg = Config(kDual);
  EXPECT_TRUE(StatusWith(cfg, store).ok());
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(AllocateAll(cfg, O(id), store).ok());
  auto full = StatusWith(cfg, store);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, kErrPluginNotAvailable);
  EXPECT_EQ(full.error().msg, "no IP addresses available in range set: 10.5.0.2-10.5.0.5");
  ASSERT_TRUE(DelWith(cfg, O("b"), store).ok());
  EXPECT_TRUE(StatusWith(cfg, store).ok());
}

}  // namespace
}  // namespace nodegate::ipam
