// getaddrinfo, getnameinfo and getprotobyname/number as the executables get them
// (lib/net/name_lookup.h), on files of the test's own: flags, families, socket kinds, services,
// canonical names, numeric hosts, errors. Only names the files hold are looked up, so no DNS
// query leaves the machine; DNS itself is tests/executables/name_lookup_netns_test.sh's.
#include "lib/net/name_lookup.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace nodegate::net {
namespace {

class NameLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/ng-name-lookup-test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    files_.hosts = Write("hosts",
                         "127.0.0.1 localhost\n"
                         "10.0.0.5 manifests.example manifests\n"
                         "fd00::5 manifests.example\n"
                         "fd00::6 v6-only.example\n");
    files_.services = Write("services",
                            "http 80/tcp www\n"
                            "domain 53/tcp\n"
                            "domain 53/udp\n"
                            "syslog 514/udp\n");
    files_.protocols = Write("protocols", "tcp 6 TCP\nudp 17 UDP\nsctp 132 SCTP\n");
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // "FAMILY/SOCKTYPE/PROTOCOL ADDRESS PORT" per entry, and the canonical name if any.
  struct Listed {
    int error = 0;
    std::vector<std::string> entries;
    std::string canonical_name;
  };
  Listed Lookup(const char* node, const char* service, int flags = 0, int family = AF_UNSPEC,
                int socktype = 0, int protocol = 0) {
    addrinfo hints{};
    hints.ai_flags = flags;
    hints.ai_family = family;
    hints.ai_socktype = socktype;
    hints.ai_protocol = protocol;
    addrinfo* list = nullptr;
    Listed out;
    out.error = GetAddrInfo(files_, node, service, &hints, &list);
    if (out.error != 0) {
      EXPECT_EQ(list, nullptr);
      return out;
    }
    if (list->ai_canonname != nullptr) out.canonical_name = list->ai_canonname;
    for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      uint16_t port = 0;
      if (ai->ai_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
        EXPECT_EQ(ai->ai_addrlen, sizeof(sockaddr_in));
        ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
        port = ntohs(in->sin_port);
      } else {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
        EXPECT_EQ(ai->ai_addrlen, sizeof(sockaddr_in6));
        ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
        port = ntohs(in6->sin6_port);
      }
      EXPECT_EQ(ai->ai_addr->sa_family, ai->ai_family);
      const char* kind = ai->ai_socktype == SOCK_STREAM  ? "stream"
                         : ai->ai_socktype == SOCK_DGRAM ? "dgram"
                                                         : "raw";
      out.entries.push_back(std::string(kind) + "/" + std::to_string(ai->ai_protocol) + " " + text +
                            " " + std::to_string(port));
    }
    FreeAddrInfo(list);
    return out;
  }

  std::string dir_;
  LookupFiles files_;
};

using Entries = std::vector<std::string>;

TEST_F(NameLookupTest, HostsNamesPerFamilyAndSocketKind) {
  // AF_INET: one address, a stream and a datagram entry for a service, no raw one.
  EXPECT_EQ(Lookup("manifests.example", "8080", 0, AF_INET).entries,
            (Entries{"stream/6 10.0.0.5 8080", "dgram/17 10.0.0.5 8080"}));
  // Without a service, a raw entry too.
  EXPECT_EQ(Lookup("manifests", nullptr, 0, AF_INET).entries,
            (Entries{"stream/6 10.0.0.5 0", "dgram/17 10.0.0.5 0", "raw/0 10.0.0.5 0"}));
  EXPECT_EQ(Lookup("MANIFESTS.example", "80", 0, AF_INET6, SOCK_STREAM).entries,
            (Entries{"stream/6 fd00::5 80"}));
  // AF_UNSPEC: both, each address's entries together.
  const Listed both = Lookup("manifests.example", "80", 0, AF_UNSPEC, SOCK_STREAM);
  ASSERT_EQ(both.entries.size(), 2u);
  EXPECT_NE(std::find(both.entries.begin(), both.entries.end(), "stream/6 10.0.0.5 80"),
            both.entries.end());
  EXPECT_NE(std::find(both.entries.begin(), both.entries.end(), "stream/6 fd00::5 80"),
            both.entries.end());
  EXPECT_EQ(Lookup("manifests.example", "80", 0, AF_UNSPEC, 0, IPPROTO_UDP).entries.size(), 2u);
}

TEST_F(NameLookupTest, ServicesByNumberAndName) {
  EXPECT_EQ(Lookup("manifests", "http", 0, AF_INET).entries, (Entries{"stream/6 10.0.0.5 80"}));
  EXPECT_EQ(Lookup("manifests", "www", 0, AF_INET, SOCK_STREAM).entries,
            (Entries{"stream/6 10.0.0.5 80"}));
  EXPECT_EQ(Lookup("manifests", "syslog", 0, AF_INET).entries, (Entries{"dgram/17 10.0.0.5 514"}));
  EXPECT_EQ(Lookup("manifests", "domain", 0, AF_INET).entries,
            (Entries{"stream/6 10.0.0.5 53", "dgram/17 10.0.0.5 53"}));
  EXPECT_EQ(Lookup("manifests", "http", 0, AF_INET, SOCK_DGRAM).error, EAI_SERVICE);
  EXPECT_EQ(Lookup("manifests", "gopher", 0, AF_INET).error, EAI_SERVICE);
  EXPECT_EQ(Lookup("manifests", "http", AI_NUMERICSERV, AF_INET).error, EAI_NONAME);
  EXPECT_EQ(Lookup("manifests", "65536", 0, AF_INET).error, EAI_SERVICE);
  EXPECT_EQ(Lookup("manifests", "80", 0, AF_INET, SOCK_RAW).error, EAI_SERVICE);
}

TEST_F(NameLookupTest, CanonicalNames) {
  EXPECT_EQ(Lookup("manifests", "80", AI_CANONNAME, AF_INET, SOCK_STREAM).canonical_name,
            "manifests.example");
  EXPECT_EQ(Lookup("10.1.2.3", "80", AI_CANONNAME, AF_INET, SOCK_STREAM).canonical_name,
            "10.1.2.3");
  EXPECT_EQ(Lookup(nullptr, "80", AI_CANONNAME).error, EAI_BADFLAGS);
  EXPECT_EQ(Lookup("manifests", "80", 0, AF_INET).canonical_name, "");
}

TEST_F(NameLookupTest, NumericHostsNeedNoFile) {
  EXPECT_EQ(Lookup("192.0.2.7", "80", AI_NUMERICHOST, AF_UNSPEC, SOCK_STREAM).entries,
            (Entries{"stream/6 192.0.2.7 80"}));
  EXPECT_EQ(Lookup("2001:db8::7", "80", 0, AF_UNSPEC, SOCK_STREAM).entries,
            (Entries{"stream/6 2001:db8::7 80"}));
  EXPECT_EQ(Lookup("manifests", "80", AI_NUMERICHOST).error, EAI_NONAME);
  EXPECT_EQ(Lookup("", "80").error, EAI_NONAME);
  EXPECT_EQ(Lookup("192.0.2.7", "80", 0, AF_INET6).error, EAI_ADDRFAMILY);
  EXPECT_EQ(Lookup("192.0.2.7", "80", AI_V4MAPPED, AF_INET6, SOCK_STREAM).entries,
            (Entries{"stream/6 ::ffff:192.0.2.7 80"}));
  // A scope by interface name or index.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  ASSERT_EQ(GetAddrInfo(files_, "fe80::1%lo", "80", &hints, &list), 0);
  EXPECT_EQ(reinterpret_cast<sockaddr_in6*>(list->ai_addr)->sin6_scope_id, ::if_nametoindex("lo"));
  FreeAddrInfo(list);
  ASSERT_EQ(GetAddrInfo(files_, "fe80::1%7", "80", &hints, &list), 0);
  EXPECT_EQ(reinterpret_cast<sockaddr_in6*>(list->ai_addr)->sin6_scope_id, 7u);
  FreeAddrInfo(list);
  EXPECT_EQ(GetAddrInfo(files_, "10.0.0.1%lo", "80", &hints, &list), EAI_NONAME);
  EXPECT_EQ(GetAddrInfo(files_, "fe80::1%no-such-interface", "80", &hints, &list), EAI_NONAME);
}

TEST_F(NameLookupTest, NoNodeIsTheWildcardOrLoopback) {
  EXPECT_EQ(Lookup(nullptr, "80", AI_PASSIVE, AF_INET, SOCK_STREAM).entries,
            (Entries{"stream/6 0.0.0.0 80"}));
  EXPECT_EQ(Lookup(nullptr, "80", 0, AF_INET6, SOCK_STREAM).entries, (Entries{"stream/6 ::1 80"}));
  EXPECT_EQ(Lookup(nullptr, "80", 0, AF_UNSPEC, SOCK_STREAM).entries,
            (Entries{"stream/6 ::1 80", "stream/6 127.0.0.1 80"}));
  EXPECT_EQ(Lookup(nullptr, nullptr).error, EAI_NONAME);
}

TEST_F(NameLookupTest, V4MappedAndAll) {
  EXPECT_EQ(Lookup("localhost", "80", AI_V4MAPPED, AF_INET6, SOCK_STREAM).entries,
            (Entries{"stream/6 ::ffff:127.0.0.1 80"}));
  // A name with an IPv6 address: mapped ones only with AI_ALL.
  EXPECT_EQ(Lookup("manifests.example", "80", AI_V4MAPPED, AF_INET6, SOCK_STREAM).entries,
            (Entries{"stream/6 fd00::5 80"}));
  EXPECT_EQ(Lookup("manifests.example", "80", AI_V4MAPPED | AI_ALL, AF_INET6, SOCK_STREAM).entries,
            (Entries{"stream/6 fd00::5 80", "stream/6 ::ffff:10.0.0.5 80"}));
}

TEST_F(NameLookupTest, BadArguments) {
  EXPECT_EQ(Lookup("manifests", "80", 0x40 /* AI_IDN */).error, EAI_BADFLAGS);
  EXPECT_EQ(Lookup("manifests", "80", 0, AF_UNIX).error, EAI_FAMILY);
  EXPECT_EQ(Lookup("manifests", "80", 0, AF_INET, SOCK_SEQPACKET).error, EAI_SOCKTYPE);
  // Without hints: glibc's defaults (AI_V4MAPPED | AI_ADDRCONFIG, every family and kind).
  addrinfo* list = nullptr;
  ASSERT_EQ(GetAddrInfo(files_, "10.0.0.9", "80", nullptr, &list), 0);
  EXPECT_EQ(list->ai_family, AF_INET);
  FreeAddrInfo(list);
}

TEST_F(NameLookupTest, NameInfo) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(80);
  ::inet_pton(AF_INET, "10.0.0.5", &in.sin_addr);
  const auto* sa = reinterpret_cast<const sockaddr*>(&in);
  char host[64];
  char serv[32];
  ASSERT_EQ(GetNameInfo(files_, sa, sizeof(in), host, sizeof(host), serv, sizeof(serv), 0), 0);
  EXPECT_STREQ(host, "manifests.example");
  EXPECT_STREQ(serv, "http");
  ASSERT_EQ(GetNameInfo(files_, sa, sizeof(in), host, sizeof(host), serv, sizeof(serv),
                        NI_NUMERICHOST | NI_NUMERICSERV),
            0);
  EXPECT_STREQ(host, "10.0.0.5");
  EXPECT_STREQ(serv, "80");
  in.sin_port = htons(514);
  ASSERT_EQ(GetNameInfo(files_, sa, sizeof(in), nullptr, 0, serv, sizeof(serv), NI_DGRAM), 0);
  EXPECT_STREQ(serv, "syslog");
  char small[4];
  EXPECT_EQ(GetNameInfo(files_, sa, sizeof(in), small, sizeof(small), nullptr, 0, 0), EAI_OVERFLOW);
  EXPECT_EQ(GetNameInfo(files_, sa, sizeof(in) - 1, host, sizeof(host), nullptr, 0, 0), EAI_FAMILY);
  EXPECT_EQ(GetNameInfo(files_, sa, sizeof(in), host, sizeof(host), nullptr, 0, 0x20 /* NI_IDN */),
            EAI_BADFLAGS);

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(9);
  ::inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr);
  in6.sin6_scope_id = ::if_nametoindex("lo");
  ASSERT_EQ(GetNameInfo(files_, reinterpret_cast<const sockaddr*>(&in6), sizeof(in6), host,
                        sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV),
            0);
  EXPECT_STREQ(host, "fe80::1%lo");
  EXPECT_STREQ(serv, "9");
}

TEST_F(NameLookupTest, Protocols) {
  protoent* tcp = GetProtoByName(files_, "TCP");
  ASSERT_NE(tcp, nullptr);
  EXPECT_STREQ(tcp->p_name, "tcp");
  EXPECT_EQ(tcp->p_proto, 6);
  ASSERT_NE(tcp->p_aliases[0], nullptr);
  EXPECT_STREQ(tcp->p_aliases[0], "TCP");
  EXPECT_EQ(tcp->p_aliases[1], nullptr);
  protoent* sctp = GetProtoByNumber(files_, 132);
  ASSERT_NE(sctp, nullptr);
  EXPECT_STREQ(sctp->p_name, "sctp");
  EXPECT_EQ(GetProtoByName(files_, "dccp"), nullptr);
  EXPECT_EQ(GetProtoByNumber(files_, 33), nullptr);
  // No file at all: nothing, as glibc's `files` gives.
  LookupFiles none;
  none.protocols = dir_ + "/absent";
  EXPECT_EQ(GetProtoByName(none, "tcp"), nullptr);
}

TEST_F(NameLookupTest, HostByNameIsTheIpv4Addresses) {
  hostent* host = GetHostByName(files_, "manifests.example");
  ASSERT_NE(host, nullptr);
  EXPECT_STREQ(host->h_name, "manifests.example");
  EXPECT_EQ(host->h_addrtype, AF_INET);
  EXPECT_EQ(host->h_length, 4);
  EXPECT_EQ(host->h_aliases[0], nullptr);
  ASSERT_NE(host->h_addr_list[0], nullptr);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, host->h_addr_list[0], text, sizeof(text));
  EXPECT_STREQ(text, "10.0.0.5");
  EXPECT_EQ(host->h_addr_list[1], nullptr);
  host = GetHostByName(files_, "192.0.2.7");
  ASSERT_NE(host, nullptr);
  ::inet_ntop(AF_INET, host->h_addr_list[0], text, sizeof(text));
  EXPECT_STREQ(text, "192.0.2.7");
  EXPECT_EQ(GetHostByName(files_, "fd00::5"), nullptr);  // no IPv4 address
  EXPECT_EQ(GetHostByName(files_, nullptr), nullptr);
}

}  // namespace
}  // namespace nodegate::net
