// /etc/hosts, /etc/services and /etc/protocols read as glibc's `files` module reads them.
#include "lib/net/lookup_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nodegate::net {
namespace {

std::vector<std::string> Texts(const std::vector<IpAddress>& addresses) {
  std::vector<std::string> out;
  for (const IpAddress& a : addresses) out.push_back(a.ToString());
  return out;
}

constexpr char kHosts[] =
    "# a comment line\n"
    "127.0.0.1\tlocalhost\n"
    "::1     localhost ip6-localhost ip6-loopback\n"
    "10.0.0.5 Manifests.Example manifests # the web server\n"
    "not-an-address broken.example\n"
    "10.0.0.6\n"
    "fd00::5 manifests.example\r\n"
    "10.0.0.7 other.example manifests.example\n";

TEST(FindHostsAddresses, EveryMatchingLineInFileOrderCaseInsensitive) {
  const HostsMatch m = FindHostsAddresses(kHosts, "manifests.example");
  EXPECT_EQ(Texts(m.addresses), (std::vector<std::string>{"10.0.0.5", "fd00::5", "10.0.0.7"}));
  EXPECT_EQ(m.canonical_name, "Manifests.Example");  // the first matching line's name
  EXPECT_EQ(Texts(FindHostsAddresses(kHosts, "MANIFESTS").addresses),
            (std::vector<std::string>{"10.0.0.5"}));  // an alias
  EXPECT_EQ(Texts(FindHostsAddresses(kHosts, "localhost").addresses),
            (std::vector<std::string>{"127.0.0.1", "::1"}));
}

TEST(FindHostsAddresses, CommentsBadLinesAndPartsOfNamesDoNotMatch) {
  EXPECT_TRUE(FindHostsAddresses(kHosts, "the").addresses.empty());  // inside a comment
  EXPECT_TRUE(FindHostsAddresses(kHosts, "broken.example").addresses.empty());
  EXPECT_TRUE(FindHostsAddresses(kHosts, "manifests.exampl").addresses.empty());
  EXPECT_TRUE(FindHostsAddresses(kHosts, "10.0.0.6").addresses.empty());
  EXPECT_TRUE(FindHostsAddresses("", "localhost").addresses.empty());
  EXPECT_EQ(FindHostsAddresses("10.1.1.1 last-line-without-newline", "last-line-without-newline")
                .addresses.size(),
            1u);
}

TEST(FindHostsName, FirstLineOfTheAddress) {
  EXPECT_EQ(FindHostsName(kHosts, *IpAddress::Parse("10.0.0.5")), "Manifests.Example");
  EXPECT_EQ(FindHostsName(kHosts, *IpAddress::Parse("::1")), "localhost");
  EXPECT_EQ(FindHostsName(kHosts, *IpAddress::Parse("0:0::1")), "localhost");
  EXPECT_FALSE(FindHostsName(kHosts, *IpAddress::Parse("10.0.0.6")));  // a line without a name
  EXPECT_FALSE(FindHostsName(kHosts, *IpAddress::Parse("10.9.9.9")));
}

constexpr char kServices[] =
    "http\t\t80/tcp\t\twww\t\t# WorldWideWeb HTTP\n"
    "domain\t\t53/tcp\n"
    "domain\t\t53/udp\n"
    "syslog\t\t514/udp\n"
    "bad\t\t99999/tcp\n"
    "noproto\t\t77\n";

TEST(Services, PortsAndNamesPerProtocol) {
  EXPECT_EQ(FindServicePort(kServices, "http", "tcp"), 80);
  EXPECT_EQ(FindServicePort(kServices, "www", "tcp"), 80);
  EXPECT_FALSE(FindServicePort(kServices, "http", "udp"));
  EXPECT_FALSE(FindServicePort(kServices, "HTTP", "tcp"));  // case-sensitive, as glibc
  EXPECT_EQ(FindServicePort(kServices, "domain", "udp"), 53);
  EXPECT_FALSE(FindServicePort(kServices, "syslog", "tcp"));
  EXPECT_FALSE(FindServicePort(kServices, "bad", "tcp"));
  EXPECT_FALSE(FindServicePort(kServices, "noproto", "tcp"));
  EXPECT_EQ(FindServiceName(kServices, 514, "udp"), "syslog");
  EXPECT_EQ(FindServiceName(kServices, 80, "tcp"), "http");
  EXPECT_FALSE(FindServiceName(kServices, 80, "udp"));
}

constexpr char kProtocols[] =
    "ip\t0\tIP\t\t# internet protocol, pseudo protocol number\n"
    "tcp\t6\tTCP\n"
    "udp\t17\tUDP\n"
    "ipv6-icmp 58 IPv6-ICMP icmp6\n"
    "odd\tx\n";

TEST(Protocols, ByNameAliasAndNumber) {
  const auto tcp = FindProtocolByName(kProtocols, "TCP");
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->name, "tcp");
  EXPECT_EQ(tcp->number, 6);
  EXPECT_EQ(tcp->aliases, std::vector<std::string>{"TCP"});
  const auto icmp6 = FindProtocolByNumber(kProtocols, 58);
  ASSERT_TRUE(icmp6);
  EXPECT_EQ(icmp6->name, "ipv6-icmp");
  EXPECT_EQ(icmp6->aliases, (std::vector<std::string>{"IPv6-ICMP", "icmp6"}));
  EXPECT_EQ(FindProtocolByName(kProtocols, "icmp6")->number, 58);
  EXPECT_FALSE(FindProtocolByName(kProtocols, "odd"));
  EXPECT_FALSE(FindProtocolByName(kProtocols, "sctp"));
  EXPECT_FALSE(FindProtocolByNumber(kProtocols, 132));
  EXPECT_EQ(FindProtocolByNumber(kProtocols, 0)->name, "ip");
}

}  // namespace
}  // namespace nodegate::net
