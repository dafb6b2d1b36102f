// IpAddress and IpPrefix: parsing (strict, NUL-safe), RFC 5952 text, arithmetic, masks.
#include "lib/net/ip.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace nodegate {
namespace {

TEST(IpAddress, ParseFormatAndArithmetic) {
  auto v4 = net::IpAddress::Parse("10.0.0.255");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->Next().ToString(), "10.0.1.0");
  EXPECT_EQ(v4->Prev().ToString(), "10.0.0.254");
  auto v6 = net::IpAddress::Parse("2001:0db8:0000:0000:0000:0000:0000:00ff");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->ToString(), "2001:db8::ff");  // RFC 5952
  EXPECT_EQ(v6->Next().ToString(), "2001:db8::100");
  EXPECT_FALSE(net::IpAddress::Parse("10.0.0.256"));
  // An embedded NUL (a JSON "\u0000") must not cut the text short.
  EXPECT_FALSE(net::IpAddress::Parse(std::string_view("1.2.3.4\0garbage", 15)));
  EXPECT_FALSE(net::IpPrefix::Parse(std::string_view("10.0.0.0/8\0x", 12)));
  EXPECT_FALSE(net::IpAddress::Parse(""));
  EXPECT_FALSE(net::IpAddress::Parse("1.2.3"));
  EXPECT_LT(*net::IpAddress::Parse("10.0.0.9"), *net::IpAddress::Parse("10.0.0.10"));
}

// IPv4 text is written by hand (not inet_ntop): every byte value, in every position, as
// inet_ntop writes it.
TEST(IpAddress, Ipv4TextMatchesInetNtop) {
  for (int b = 0; b < 256; ++b) {
    const uint8_t bytes[4] = {static_cast<uint8_t>(b), static_cast<uint8_t>(255 - b),
                              static_cast<uint8_t>(b / 3), static_cast<uint8_t>(b % 10)};
    char expected[INET_ADDRSTRLEN] = {};
    ASSERT_NE(inet_ntop(AF_INET, bytes, expected, sizeof(expected)), nullptr);
    auto parsed = net::IpAddress::Parse(expected);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->ToString(), expected);
  }
  EXPECT_EQ(net::IpAddress::Parse("0.0.0.0")->ToString(), "0.0.0.0");
  EXPECT_EQ(net::IpAddress::Parse("255.255.255.255")->ToString(), "255.255.255.255");
}

TEST(IpPrefix, KeepsHostBitsAndMasks) {
  auto p = net::IpPrefix::Parse("10.88.0.2/16");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ToString(), "10.88.0.2/16");
  EXPECT_EQ(p->Network().ToString(), "10.88.0.0");
  EXPECT_EQ(p->LastAddress().ToString(), "10.88.255.255");
  EXPECT_TRUE(p->Contains(*net::IpAddress::Parse("10.88.7.7")));
  EXPECT_FALSE(p->Contains(*net::IpAddress::Parse("10.89.0.1")));
  EXPECT_FALSE(p->Contains(*net::IpAddress::Parse("::1")));
  auto v6 = net::IpPrefix::Parse("2001:db8::1/125");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->LastAddress().ToString(), "2001:db8::7");
  EXPECT_TRUE(net::IpPrefix::Parse("10.0.0.0/8")->Overlaps(*net::IpPrefix::Parse("10.1.0.0/16")));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.0/33"));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.0/"));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.1"));
  EXPECT_EQ(net::IpPrefix::Parse("10.0.0.1", true)->length(), 32);
}

}  // namespace
}  // namespace nodegate
