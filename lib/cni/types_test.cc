// Result model tests: golden JSON for each result version, and conversion between every pair
// of supported versions in both directions.
#include "lib/cni/types.h"

#include <gtest/gtest.h>

#include "lib/cni/version.h"

namespace nodegate::cni {
namespace {

CniResult SampleResult() {
  CniResult r;
  r.interfaces.push_back({.name = "eth0",
                          .mac = "02:42:ac:11:00:02",
                          .sandbox = "/run/netns/c1",
                          .mtu = 1500,
                          .socket_path = "",
                          .pci_id = ""});
  r.ips.push_back({.interface = 0,
                   .address = *net::IpPrefix::Parse("10.88.0.2/16"),
                   .gateway = net::IpAddress::Parse("10.88.0.1")});
  r.ips.push_back({.interface = 0,
                   .address = *net::IpPrefix::Parse("2001:db8::2/64"),
                   .gateway = net::IpAddress::Parse("2001:db8::1")});
  r.routes.push_back({.dst = *net::IpPrefix::Parse("0.0.0.0/0"),
                      .gw = net::IpAddress::Parse("10.88.0.1"),
                      .mtu = 1400});
  r.routes.push_back({.dst = *net::IpPrefix::Parse("::/0")});
  r.dns.nameservers = {"192.0.2.53"};
  r.dns.search = {"example.test"};
  return r;
}

std::string Encode(const CniResult& r, const std::string& version) {
  auto j = EncodeResult(r, version);
  EXPECT_TRUE(j.ok());
  return j.ok() ? FormatJson(*j) : "";
}

TEST(Golden, Version020) {
  EXPECT_EQ(Encode(SampleResult(), "0.2.0"), R"({
    "cniVersion": "0.2.0",
    "ip4": {
        "ip": "10.88.0.2/16",
        "gateway": "10.88.0.1",
        "routes": [
            {
                "dst": "0.0.0.0/0",
                "gw": "10.88.0.1"
            }
        ]
    },
    "ip6": {
        "ip": "2001:db8::2/64",
        "gateway": "2001:db8::1",
        "routes": [
            {
                "dst": "::/0"
            }
        ]
    },
    "dns": {
        "nameservers": [
            "192.0.2.53"
        ],
        "search": [
            "example.test"
        ]
    }
})");
}

TEST(Golden, Version040) {
  EXPECT_EQ(Encode(SampleResult(), "0.4.0"), R"({
    "cniVersion": "0.4.0",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "02:42:ac:11:00:02",
            "sandbox": "/run/netns/c1"
        }
    ],
    "ips": [
        {
            "version": "4",
            "interface": 0,
            "address": "10.88.0.2/16",
            "gateway": "10.88.0.1"
        },
        {
            "version": "6",
            "interface": 0,
            "address": "2001:db8::2/64",
            "gateway": "2001:db8::1"
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.88.0.1"
        },
        {
            "dst": "::/0"
        }
    ],
    "dns": {
        "nameservers": [
            "192.0.2.53"
        ],
        "search": [
            "example.test"
        ]
    }
})");
}

TEST(Golden, Version110KeepsExtendedFields) {
  EXPECT_EQ(Encode(SampleResult(), "1.1.0"), R"({
    "cniVersion": "1.1.0",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "02:42:ac:11:00:02",
            "mtu": 1500,
            "sandbox": "/run/netns/c1"
        }
    ],
    "ips": [
        {
            "interface": 0,
            "address": "10.88.0.2/16",
            "gateway": "10.88.0.1"
        },
        {
            "interface": 0,
            "address": "2001:db8::2/64",
            "gateway": "2001:db8::1"
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.88.0.1",
            "mtu": 1400
        },
        {
            "dst": "::/0"
        }
    ],
    "dns": {
        "nameservers": [
            "192.0.2.53"
        ],
        "search": [
            "example.test"
        ]
    }
})");
}

TEST(Golden, EmptyDnsPrintsEmptyObject) {
  CniResult r;
  r.ips.push_back({.address = *net::IpPrefix::Parse("10.0.0.5/24")});
  EXPECT_EQ(Encode(r, "1.0.0"), R"({
    "cniVersion": "1.0.0",
    "ips": [
        {
            "address": "10.0.0.5/24"
        }
    ],
    "dns": {}
})");
}

using Pair = std::tuple<std::string, std::string>;
class Conversion : public ::testing::TestWithParam<Pair> {};

// Converting from -> to, then decoding, keeps what the lower of the two schemas can hold.
TEST_P(Conversion, KeepsWhatBothSchemasHold) {
  const auto& [from, to] = GetParam();
  auto from_json = EncodeResult(SampleResult(), from);
  ASSERT_TRUE(from_json.ok());
  auto decoded = DecodeResult(Json::parse(from_json->dump()), "");
  ASSERT_TRUE(decoded.ok()) << decoded.error().msg;
  EXPECT_EQ(decoded->cni_version, from);
  auto to_json = EncodeResult(*decoded, to);
  ASSERT_TRUE(to_json.ok());
  auto back = DecodeResult(Json::parse(to_json->dump()), "");
  ASSERT_TRUE(back.ok()) << back.error().msg;
  EXPECT_EQ(back->cni_version, to);

  const bool any020 = *FamilyOf(from) == ResultFamily::k020 || *FamilyOf(to) == ResultFamily::k020;
  const bool both100 = *FamilyOf(from) == ResultFamily::k100 && *FamilyOf(to) == ResultFamily::k100;
  ASSERT_EQ(back->ips.size(), 2u);
  EXPECT_EQ(back->ips[0].address.ToString(), "10.88.0.2/16");
  EXPECT_EQ(back->ips[1].address.ToString(), "2001:db8::2/64");
  EXPECT_EQ(back->ips[1].gateway->ToString(), "2001:db8::1");
  EXPECT_EQ(back->routes.size(), 2u);
  EXPECT_EQ(back->dns, SampleResult().dns);
  if (any020) {
    EXPECT_TRUE(back->interfaces.empty());
    EXPECT_FALSE(back->ips[0].interface.has_value());
  } else {
    ASSERT_EQ(back->interfaces.size(), 1u);
    EXPECT_EQ(back->interfaces[0].mac, "02:42:ac:11:00:02");
    EXPECT_EQ(back->ips[0].interface, 0);
    EXPECT_EQ(back->interfaces[0].mtu.has_value(), both100);
    EXPECT_EQ(back->routes[0].mtu.has_value(), both100);
  }
}

std::vector<Pair> AllPairs() {
  std::vector<Pair> out;
  for (const auto& a : AllVersions()) {
    for (const auto& b : AllVersions()) {
      out.emplace_back(a, b);
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryPair, Conversion, ::testing::ValuesIn(AllPairs()),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_to_" + std::get<1>(info.param);
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return name;
                         });

TEST(Decode, RejectsMalformedFields) {
  EXPECT_EQ(DecodeResult(Json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"x"}]})"), "")
                .error()
                .code,
            kErrDecode);
  EXPECT_EQ(DecodeResult(Json::parse(R"({"cniVersion":"1.0.0","ips":{}})"), "").error().code,
            kErrDecode);
  EXPECT_EQ(DecodeResult(Json::parse(R"({"cniVersion":"7.0.0"})"), "").error().code,
            kErrIncompatibleVersion);
  EXPECT_EQ(DecodeResult(Json::parse(R"({"cniVersion":"1.0.0","ips":[{"interface":3,)"
                                     R"("address":"10.0.0.1/8"}]})"),
                         "")
                .error()
                .code,
            kErrDecode);
}

TEST(Decode, MissingVersionTakesDefault) {
  auto r = DecodeResult(Json::parse(R"({"ip4":{"ip":"10.0.0.1/8"}})"), "0.2.0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cni_version, "0.2.0");
  EXPECT_EQ(r->ips.size(), 1u);
}

TEST(ErrorJson, RoundTrips) {
  const Error e(kErrInvalidConfig, "bad", "why");
  auto back = DecodeError(FormatError(e));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, 7);
  EXPECT_EQ(back->msg, "bad");
  EXPECT_EQ(back->details, "why");
  EXPECT_FALSE(DecodeError("not json").has_value());
}

}  // namespace
}  // namespace nodegate::cni
