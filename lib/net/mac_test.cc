#include "lib/net/mac.h"

#include <gtest/gtest.h>

namespace nodegate::net {
namespace {

TEST(ParseMac, GoForms) {
  // The three spellings Go's net.ParseMAC reads, in either case.
  for (const char* text : {"c2:11:22:33:44:55", "C2-11-22-33-44-55", "c211.2233.4455"}) {
    auto mac = ParseMac(text);
    ASSERT_TRUE(mac) << text;
    EXPECT_EQ(FormatMac(*mac), "c2:11:22:33:44:55") << text;
  }
  // EUI-64 and IP-over-InfiniBand lengths parse (a veth then refuses them: IsUsableEthernetMac).
  EXPECT_EQ(ParseMac("02:00:5e:10:00:00:00:01")->size(), 8u);
  EXPECT_EQ(ParseMac("0000.0000.fe80.0000.0000.0000.0200.5e10.0000.0001")->size(), 20u);
}

TEST(ParseMac, Refusals) {
  for (const char* text :
       {"", "c2:11:22:33:44", "c2:11:22:33:44:5", "c2:11-22:33:44:55", "c2:11:22:33:44:5g",
        "c2112233445", "c2:11:22:33:44:55:", "c2 11 22 33 44 55", "c2:11:22:33:44:55:66"}) {
    EXPECT_FALSE(ParseMac(text)) << text;
  }
}

TEST(IsUsableEthernetMac, MulticastZeroAndLength) {
  EXPECT_TRUE(IsUsableEthernetMac(*ParseMac("c2:11:22:33:44:55")));
  EXPECT_FALSE(IsUsableEthernetMac(*ParseMac("01:00:5e:00:00:01")));  // multicast bit
  EXPECT_FALSE(IsUsableEthernetMac(*ParseMac("00:00:00:00:00:00")));
  EXPECT_FALSE(IsUsableEthernetMac(*ParseMac("02:00:5e:10:00:00:00:01")));  // 8 bytes
}

}  // namespace
}  // namespace nodegate::net
