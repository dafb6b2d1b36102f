// AttrWriter and the parsers of nlattr.h: what the writer lays out is what the kernel's
// nla_* helpers expect (4-byte alignment, zeroed padding, NUL-terminated strings, big-endian
// integers, NLA_F_NESTED), and the parsers read it back or refuse a length that runs past the end.
#include "lib/netfilter/nlattr.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace nodegate::netfilter {
namespace {

TEST(AttrWriter, LayoutIsAlignedAndPaddedWithZeros) {
  AttrWriter w;
  w.PutString(1, "nat");  // 4 + "nat\0": exactly 8 bytes, no padding
  const uint8_t odd[] = {0xaa, 0xbb, 0xcc, 0xdd, 0xee};
  w.Put(2, odd, sizeof(odd));  // 4 + 5 bytes, padded to 12
  // Headers are in host byte order (little-endian here); payload bytes as written. The length
  // field counts no padding.
  const std::vector<uint8_t> string_attr = {8, 0, 1, 0, 'n', 'a', 't', 0};
  const std::vector<uint8_t> odd_attr = {9, 0, 2, 0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 0};
  ASSERT_EQ(w.bytes().size(), string_attr.size() + odd_attr.size());
  EXPECT_EQ(std::vector<uint8_t>(w.bytes().begin(), w.bytes().begin() + 8), string_attr);
  EXPECT_EQ(std::vector<uint8_t>(w.bytes().begin() + 8, w.bytes().end()), odd_attr);
}

TEST(AttrWriter, IntegersAreBigEndian) {
  AttrWriter w;
  w.PutBe32(3, 0x01020304);
  w.PutBe64(4, 0x0102030405060708ull);
  const std::vector<uint8_t> want = {8,  0, 3, 0, 1, 2, 3, 4,  //
                                     12, 0, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(w.bytes(), want);
}

TEST(AttrWriter, RoundTripsThroughParseAttrs) {
  AttrWriter w;
  w.PutString(1, "cni_hostport");
  w.PutBe32(2, 0xfffffff1);
  w.PutBe64(3, 0x8000000000000001ull);
  w.Put(4, nullptr, 0);
  w.PutString(5, "");
  const auto attrs = ParseAttrs(w.bytes());
  ASSERT_TRUE(attrs.has_value());
  ASSERT_EQ(attrs->size(), 5u);
  EXPECT_EQ((*attrs)[0].type, 1);
  EXPECT_EQ((*attrs)[0].String(), "cni_hostport");
  EXPECT_EQ((*attrs)[0].data.size(), 13u);  // with the NUL
  EXPECT_EQ((*attrs)[1].Be32(), 0xfffffff1u);
  EXPECT_EQ((*attrs)[2].Be64(), 0x8000000000000001ull);
  EXPECT_TRUE((*attrs)[3].data.empty());
  EXPECT_EQ((*attrs)[3].U8(), 0);  // empty reads as zero, not out of bounds
  EXPECT_EQ((*attrs)[4].String(), "");
}

TEST(AttrWriter, NestedAttributesCarryTheFlagAndTheirLength) {
  AttrWriter w;
  const size_t nest = w.BeginNested(7);
  w.PutBe32(1, 42);
  w.PutString(2, "x");
  w.EndNested(nest);
  w.PutBe32(8, 9);
  // The outer header covers itself and both inner attributes (8 + 8 bytes).
  nlattr header;
  std::memcpy(&header, w.bytes().data(), sizeof(header));
  EXPECT_EQ(header.nla_len, 4 + 8 + 8);
  EXPECT_EQ(header.nla_type, 7 | NLA_F_NESTED);

  const auto outer = ParseAttrs(w.bytes());
  ASSERT_TRUE(outer.has_value());
  ASSERT_EQ(outer->size(), 2u);
  EXPECT_EQ((*outer)[0].type, 7);  // NLA_F_NESTED masked off
  EXPECT_EQ((*outer)[1].Be32(), 9u);
  const auto inner = ParseAttrs((*outer)[0].data);
  ASSERT_TRUE(inner.has_value());
  ASSERT_EQ(inner->size(), 2u);
  EXPECT_EQ((*inner)[0].Be32(), 42u);
  EXPECT_EQ((*inner)[1].String(), "x");
}

TEST(AttrWriter, AppendAndTake) {
  AttrWriter inner;
  inner.PutBe32(1, 5);
  AttrWriter outer;
  outer.Reserve(64);
  outer.Append(inner.bytes());
  EXPECT_EQ(outer.bytes(), inner.bytes());
  const std::vector<uint8_t> taken = outer.Take();
  EXPECT_EQ(taken.size(), 8u);
}

TEST(ParseAttrs, RefusesLengthsPastTheEnd) {
  AttrWriter w;
  w.PutBe32(1, 1);
  std::vector<uint8_t> bytes = w.bytes();
  bytes[0] = 12;  // claims 4 bytes more than there are
  EXPECT_FALSE(ParseAttrs(bytes).has_value());
  bytes[0] = 3;  // shorter than its own header
  EXPECT_FALSE(ParseAttrs(bytes).has_value());
  // A trailing fragment shorter than a header is ignored, as the kernel's nla_for_each does.
  bytes = w.bytes();
  bytes.push_back(0);
  bytes.push_back(0);
  const auto attrs = ParseAttrs(bytes);
  ASSERT_TRUE(attrs.has_value());
  EXPECT_EQ(attrs->size(), 1u);
  EXPECT_TRUE(ParseAttrs({}).has_value());
}

TEST(ParseAttrs, ShortValuesReadAsZero) {
  AttrWriter w;
  const uint8_t two[] = {1, 2};
  w.Put(1, two, sizeof(two));
  const auto attrs = ParseAttrs(w.bytes());
  ASSERT_TRUE(attrs.has_value());
  EXPECT_EQ((*attrs)[0].Be32(), 0u);
  EXPECT_EQ((*attrs)[0].Be64(), 0u);
  EXPECT_EQ((*attrs)[0].U8(), 1);
  // A string without its NUL ends at the attribute's end.
  AttrWriter s;
  const char text[] = {'a', 'b', 'c'};
  s.Put(2, text, sizeof(text));
  EXPECT_EQ((*ParseAttrs(s.bytes()))[0].String(), "abc");
}

TEST(ForEachAttr, StopsWhenAskedAndFindAttrTakesTheLast) {
  AttrWriter w;
  w.PutBe32(1, 10);
  w.PutBe32(2, 20);
  w.PutBe32(1, 30);
  int seen = 0;
  EXPECT_TRUE(ForEachAttr(w.bytes(), [&](const Attr& a) {
    ++seen;
    return a.type != 2;
  }));
  EXPECT_EQ(seen, 2);
  const auto attrs = ParseAttrs(w.bytes());
  ASSERT_TRUE(attrs.has_value());
  const Attr* one = FindAttr(*attrs, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->Be32(), 30u);
  EXPECT_EQ(FindAttr(*attrs, 3), nullptr);
}

TEST(NfnlPayload, TheAttributesAfterBothHeaders) {
  AttrWriter w;
  w.PutString(1, "nat");
  const size_t headers = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
  std::vector<uint8_t> message(headers + w.bytes().size(), 0);
  nlmsghdr header{};
  header.nlmsg_len = static_cast<uint32_t>(message.size());
  std::memcpy(message.data(), &header, sizeof(header));
  std::memcpy(message.data() + headers, w.bytes().data(), w.bytes().size());
  const auto* h = reinterpret_cast<const nlmsghdr*>(message.data());
  const auto payload = NfnlPayload(h);
  ASSERT_TRUE(payload);
  EXPECT_EQ(std::vector<uint8_t>(payload->begin(), payload->end()), w.bytes());
  // A message too short for its nfgenmsg has no payload at all.
  header.nlmsg_len = NLMSG_HDRLEN + 2;
  std::memcpy(message.data(), &header, sizeof(header));
  EXPECT_FALSE(NfnlPayload(h));
}

}  // namespace
}  // namespace nodegate::netfilter
