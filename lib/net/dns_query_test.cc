// Reading DNS responses: address and pointer records, CNAME chains, compression, malformed
// messages; the reverse names. The queries themselves run in tests/executables'
// name_lookup_netns_test against a DNS server of the test's own.
#include "lib/net/dns_query.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nodegate::net {
namespace {

using Bytes = std::vector<uint8_t>;

void Put16(Bytes& b, int v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void PutName(Bytes& b, const std::string& dotted) {
  size_t start = 0;
  while (start < dotted.size()) {
    size_t dot = dotted.find('.', start);
    if (dot == std::string::npos) dot = dotted.size();
    b.push_back(static_cast<uint8_t>(dot - start));
    b.insert(b.end(), dotted.begin() + static_cast<long>(start),
             dotted.begin() + static_cast<long>(dot));
    start = dot + 1;
  }
  b.push_back(0);
}

// A response to one question for `name`, with `answers` appended by the caller.
Bytes Response(const std::string& name, int qtype, int answer_count) {
  Bytes b;
  Put16(b, 0x1234);  // id
  Put16(b, 0x8180);  // response, recursion desired and available, no error
  Put16(b, 1);
  Put16(b, answer_count);
  Put16(b, 0);
  Put16(b, 0);
  PutName(b, name);  // at offset 12: answers point here with 0xc00c
  Put16(b, qtype);
  Put16(b, 1);
  return b;
}

// A record whose owner is a compression pointer to `owner_offset`.
void PutRecord(Bytes& b, int owner_offset, int type, const Bytes& data, int klass = 1) {
  Put16(b, 0xc000 | owner_offset);
  Put16(b, type);
  Put16(b, klass);
  Put16(b, 0);
  Put16(b, 300);  // ttl
  Put16(b, static_cast<int>(data.size()));
  b.insert(b.end(), data.begin(), data.end());
}

std::vector<std::string> Texts(const std::vector<IpAddress>& addresses) {
  std::vector<std::string> out;
  for (const IpAddress& a : addresses) out.push_back(a.ToString());
  return out;
}

TEST(ReadDnsAddresses, ARecordsAfterACnameChainNameTheirOwner) {
  Bytes b = Response("www.example", 1, 4);
  Bytes cname;
  PutName(cname, "real.example");
  const int cname_data_offset = static_cast<int>(b.size()) + 12;  // after owner..rdlength
  PutRecord(b, 12, 5, cname);                                     // www.example CNAME
  PutRecord(b, cname_data_offset, 1, {10, 0, 0, 9});              // real.example A
  PutRecord(b, cname_data_offset, 1, {10, 0, 0, 10});
  PutRecord(b, cname_data_offset, 1, {10, 0, 0, 11}, /*klass=*/3);  // CHAOS: not ours
  const DnsAddresses got = ReadDnsAddresses(b, Family::kV4);
  EXPECT_EQ(got.outcome, DnsOutcome::kFound);
  EXPECT_EQ(got.canonical_name, "real.example");
  EXPECT_EQ(Texts(got.addresses), (std::vector<std::string>{"10.0.0.9", "10.0.0.10"}));
  EXPECT_EQ(ReadDnsAddresses(b, Family::kV6).outcome, DnsOutcome::kNoData);
}

TEST(ReadDnsAddresses, AaaaRecords) {
  Bytes b = Response("v6.example", 28, 1);
  PutRecord(b, 12, 28, {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5});
  const DnsAddresses got = ReadDnsAddresses(b, Family::kV6);
  EXPECT_EQ(got.outcome, DnsOutcome::kFound);
  EXPECT_EQ(got.canonical_name, "v6.example");
  EXPECT_EQ(Texts(got.addresses), std::vector<std::string>{"fd00::5"});
}

TEST(ReadDnsAddresses, MalformedMessagesAreFailuresNotAddresses) {
  Bytes good = Response("www.example", 1, 1);
  PutRecord(good, 12, 1, {10, 0, 0, 9});
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const Bytes truncated(good.begin(), good.begin() + static_cast<long>(cut));
    EXPECT_EQ(ReadDnsAddresses(truncated, Family::kV4).outcome, DnsOutcome::kFailed) << cut;
  }
  Bytes wrong_length = Response("www.example", 1, 1);
  PutRecord(wrong_length, 12, 1, {10, 0, 0});  // an A record of 3 bytes
  EXPECT_EQ(ReadDnsAddresses(wrong_length, Family::kV4).outcome, DnsOutcome::kFailed);
  Bytes loop = Response("www.example", 1, 1);
  loop.push_back(0xc0);  // an owner pointing at itself
  loop.push_back(static_cast<uint8_t>(loop.size() - 1));
  EXPECT_EQ(ReadDnsAddresses(loop, Family::kV4).outcome, DnsOutcome::kFailed);
}

TEST(ReadDnsPointer, TheFirstPointerRecordsName) {
  Bytes b = Response("9.0.0.10.in-addr.arpa", 12, 2);
  Bytes name;
  PutName(name, "host.example");
  PutRecord(b, 12, 12, name);
  Bytes second;
  PutName(second, "alias.example");
  PutRecord(b, 12, 12, second);
  const DnsAddresses got = ReadDnsPointer(b);
  EXPECT_EQ(got.outcome, DnsOutcome::kFound);
  EXPECT_EQ(got.canonical_name, "host.example");
  EXPECT_EQ(ReadDnsPointer(Response("9.0.0.10.in-addr.arpa", 12, 0)).outcome, DnsOutcome::kNoData);
}

TEST(ReverseDnsName, BothFamilies) {
  EXPECT_EQ(ReverseDnsName(*IpAddress::Parse("10.0.0.9")), "9.0.0.10.in-addr.arpa");
  EXPECT_EQ(ReverseDnsName(*IpAddress::Parse("2001:db8::567:89ab")),
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
}

}  // namespace
}  // namespace nodegate::net
