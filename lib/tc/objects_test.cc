// The tc objects as plain values: handle text, Describe's words, which fields the kernel
// comparisons look at, and the u32 keys of an address prefix. No netlink.
#include "lib/tc/objects.h"

#include <gtest/gtest.h>

#include "lib/net/ip.h"

namespace nodegate::tc {
namespace {

TEST(KeysTest, AddressKeys) {
  auto v4 = AddressKeys(*net::IpPrefix::Parse("198.51.100.7/24"), /*source=*/false);
  ASSERT_EQ(v4.size(), 1u);
  EXPECT_EQ(v4[0], (U32Key{.mask = 0xffffff00, .value = 0xc6336400, .offset = 16}));
  auto v4src = AddressKeys(*net::IpPrefix::Parse("10.0.0.0/8"), /*source=*/true);
  EXPECT_EQ(v4src[0].offset, 12);
  auto v6 = AddressKeys(*net::IpPrefix::Parse("2001:db8:abcd:1234:e000::/68"), false);
  ASSERT_EQ(v6.size(), 3u);  // 32 + 32 + 4 bits; the zero-mask words are left out
  EXPECT_EQ(v6[0], (U32Key{.mask = 0xffffffff, .value = 0x20010db8, .offset = 24}));
  EXPECT_EQ(v6[2], (U32Key{.mask = 0xf0000000, .value = 0xe0000000, .offset = 32}));
  EXPECT_EQ(AddressKeys(*net::IpPrefix::Parse("0.0.0.0/0"), false), MatchAllKeys());
}

TEST(HandleTest, MajorMinorText) {
  EXPECT_EQ(MakeHandle(1, 0), 0x00010000u);
  EXPECT_EQ(MakeHandle(1, 0x12345), 0x00012345u);  // the minor keeps 16 bits
  EXPECT_EQ(HandleString(kRootParent), "root");
  EXPECT_EQ(HandleString(kIngressParent), "ingress");
  EXPECT_EQ(HandleString(kIngressHandle), "ffff:");
  EXPECT_EQ(HandleString(MakeHandle(1, 0)), "1:");
  EXPECT_EQ(HandleString(MakeHandle(1, 2)), "1:2");
  EXPECT_EQ(HandleString(MakeHandle(0xa, 0xbc)), "a:bc");  // hex, as tc prints them
  EXPECT_EQ(HandleString(0), "0:");
}

TEST(DescribeTest, QdiscKinds) {
  Qdisc htb{.kind = "htb", .handle = MakeHandle(1, 0), .htb_default = 1, .htb_direct_qlen = 1000};
  EXPECT_EQ(Describe(htb), "htb 1: parent root default 1 direct_qlen 1000");
  Qdisc pfifo{
      .kind = "pfifo", .handle = MakeHandle(2, 0), .parent = MakeHandle(1, 1), .fifo_limit = 50};
  EXPECT_EQ(Describe(pfifo), "pfifo 2: parent 1:1 limit 50p");
  Qdisc ingress{.kind = "ingress", .handle = kIngressHandle, .parent = kIngressParent};
  EXPECT_EQ(Describe(ingress), "ingress ffff: parent ingress");
  // A kind we do not model keeps only its place.
  Qdisc other{.kind = "fq_codel", .handle = 0, .fifo_limit = 7};
  EXPECT_EQ(Describe(other), "fq_codel 0: parent root");
}

TEST(DescribeTest, FilterWithGactAndUnknownProtocol) {
  Filter f{.parent = MakeHandle(1, 0), .pref = 3, .protocol = 0x8100};
  f.keys = {U32Key{.mask = 0xff, .value = 0x11, .offset = -4}};
  f.actions = {Action{.kind = ActionKind::kGact, .verdict = kActOk}};
  EXPECT_EQ(Describe(f),
            "u32 parent 1: pref 3 protocol 0x8100 match 00000011/000000ff at -4 "
            "action gact pass");
  f.actions[0].verdict = 2;
  EXPECT_EQ(Describe(f).substr(Describe(f).rfind("action")), "action gact verdict 2");
}

TEST(CompareTest, KernelStateIgnoresWhatTheDumpLacks) {
  Qdisc want{.kind = "tbf", .handle = MakeHandle(1, 0)};
  want.tbf = {
      .rate_bytes = 125000, .burst_bytes = 125000, .buffer_ticks = 15625000, .limit_bytes = 128125};
  Qdisc have = want;
  have.tbf.burst_bytes = 0;  // not in the netlink dump
  have.fifo_limit = 99;      // not a tbf field
  EXPECT_TRUE(SameKernelState(want, have));
  have.tbf.limit_bytes += 1;
  EXPECT_FALSE(SameKernelState(want, have));
  have = want;
  have.parent = MakeHandle(1, 1);
  EXPECT_FALSE(SameKernelState(want, have));

  Qdisc bfifo{.kind = "bfifo", .fifo_limit = 1500};
  Qdisc other = bfifo;
  other.htb_default = 4;  // not a bfifo field
  EXPECT_TRUE(SameKernelState(bfifo, other));
  other.fifo_limit = 3000;
  EXPECT_FALSE(SameKernelState(bfifo, other));
  other = bfifo;
  other.kind = "pfifo";
  EXPECT_FALSE(SameKernelState(bfifo, other));
}

TEST(CompareTest, SameRuleIgnoresTheKernelsHandle) {
  Filter a{.pref = 1, .classid = MakeHandle(1, 1), .keys = MatchAllKeys()};
  a.actions = {Action{.ifindex = 7}};
  Filter b = a;
  b.handle = 0x80000800;
  EXPECT_TRUE(a.SameRule(b));
  b.actions[0].ifindex = 8;
  EXPECT_FALSE(a.SameRule(b));
  b = a;
  b.terminal = false;
  EXPECT_FALSE(a.SameRule(b));
  b = a;
  b.keys[0].offset = 4;
  EXPECT_FALSE(a.SameRule(b));
}

TEST(KeysTest, HostRoutesAndProtocols) {
  // A /32 is one full word; a /128 four, at the IPv6 source offsets 8..20.
  auto host = AddressKeys(*net::IpPrefix::Parse("192.0.2.1/32"), /*source=*/true);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0], (U32Key{.mask = 0xffffffff, .value = 0xc0000201, .offset = 12}));
  auto v6 = AddressKeys(*net::IpPrefix::Parse("2001:db8::1/128"), /*source=*/true);
  ASSERT_EQ(v6.size(), 4u);
  EXPECT_EQ(v6[3], (U32Key{.mask = 0xffffffff, .value = 0x00000001, .offset = 20}));
  // Host bits of the prefix are masked off the value.
  auto masked = AddressKeys(*net::IpPrefix::Parse("10.1.2.3/8"), false);
  EXPECT_EQ(masked[0], (U32Key{.mask = 0xff000000, .value = 0x0a000000, .offset = 16}));
  EXPECT_EQ(AddressKeys(*net::IpPrefix::Parse("::/0"), true), MatchAllKeys());
  EXPECT_EQ(ProtocolOf(net::Family::kV4), ETH_P_IP);
  EXPECT_EQ(ProtocolOf(net::Family::kV6), ETH_P_IPV6);
}

}  // namespace
}  // namespace nodegate::tc
