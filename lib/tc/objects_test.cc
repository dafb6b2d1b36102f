// The u32 keys of an address prefix.
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

}  // namespace
}  // namespace nodegate::tc
