// netns tier: DeleteByDestinationPort against the kernel's conntrack table, in a throwaway
// namespace, on both of its paths (a filtered dump per port, one dump for many ports).
#include "lib/conntrack/conntrack.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "lib/sys/netns.h"
#include "tests/support/netns_fixture.h"

namespace nodegate::conntrack {
namespace {

using nodegate::testing::TestNetns;

void Insert(const TestNetns& ns, const std::string& proto, int port, bool v6 = false) {
  const std::string addrs =
      v6 ? "-s 2001:db8::9 -d 2001:db8::1" : "-s 198.51.100.9 -d 198.51.100.1";
  const std::string state = proto == "tcp" ? " --state ESTABLISHED" : "";
  ns.MustRun("conntrack -I " + addrs + " -p " + proto + " --sport 999 --dport " +
             std::to_string(port) + state + " -t 600 2>/dev/null");
}

int Count(const TestNetns& ns, const std::string& proto, int port, bool v6 = false) {
  const auto r = ns.Run(std::string("conntrack -L ") + (v6 ? "-f ipv6 " : "-f ipv4 ") + "-p " +
                        proto + " --dport " + std::to_string(port) + " 2>/dev/null | wc -l");
  return std::stoi(r.output);
}

Result<Flushed> FlushIn(const TestNetns& ns, int family, const std::vector<uint16_t>& ports) {
  auto scope = sys::NetnsScope::Enter(ns.path());
  if (!scope.ok()) return scope.error();
  return DeleteByDestinationPort(family, IPPROTO_UDP, ports);
}

Result<int> DeleteIn(const TestNetns& ns, int family, const std::vector<uint16_t>& ports) {
  NG_ASSIGN_OR_RETURN(const Flushed flushed, FlushIn(ns, family, ports));
  return flushed.deleted;
}

TEST(Conntrack, DeletesOnlyTheFamilyProtocolAndPortsAsked) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-ct");
  for (int port = 7001; port <= 7010; ++port) Insert(ns, "udp", port);
  Insert(ns, "udp", 8000);
  Insert(ns, "tcp", 7001);
  Insert(ns, "udp", 7001, /*v6=*/true);

  // Many ports: one dump of the family's UDP entries.
  auto many = DeleteIn(ns, AF_INET, {7001, 7002, 7003, 7004, 7005, 7005, 9999});
  ASSERT_TRUE(many.ok()) << many.error().msg;
  EXPECT_EQ(*many, 5);
  for (int port = 7001; port <= 7005; ++port) EXPECT_EQ(Count(ns, "udp", port), 0) << port;
  for (int port = 7006; port <= 7010; ++port) EXPECT_EQ(Count(ns, "udp", port), 1) << port;

  // One port: a dump the kernel filters by port.
  auto one = DeleteIn(ns, AF_INET, {7006});
  ASSERT_TRUE(one.ok()) << one.error().msg;
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(Count(ns, "udp", 7006), 0);
  EXPECT_EQ(Count(ns, "udp", 7007), 1);

  // Never another protocol, port or family.
  EXPECT_EQ(Count(ns, "udp", 8000), 1);
  EXPECT_EQ(Count(ns, "tcp", 7001), 1);
  EXPECT_EQ(Count(ns, "udp", 7001, /*v6=*/true), 1);
  auto v6 = DeleteIn(ns, AF_INET6, {7001, 7002, 7003});
  ASSERT_TRUE(v6.ok()) << v6.error().msg;
  EXPECT_EQ(*v6, 1);
  EXPECT_EQ(Count(ns, "udp", 7001, /*v6=*/true), 0);
}

// A namespace without entries has nothing stale: no dump (each walks the kernel's whole hash).
// One entry of anything, and the ports are dumped again: one filtered dump per port up to two
// ports, one dump for more.
TEST(Conntrack, DumpsNothingWhenTheNamespaceHoldsNoEntry) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-ct0");
  auto empty = FlushIn(ns, AF_INET, {7001});
  ASSERT_TRUE(empty.ok()) << empty.error().msg;
  EXPECT_EQ(empty->dumps, 0);
  EXPECT_EQ(empty->deleted, 0);
  auto many = FlushIn(ns, AF_INET6, {7001, 7002, 7003});
  ASSERT_TRUE(many.ok()) << many.error().msg;
  EXPECT_EQ(many->dumps, 0);

  Insert(ns, "tcp", 80);  // not what is flushed, but the namespace is no longer empty
  auto one = FlushIn(ns, AF_INET, {7001});
  ASSERT_TRUE(one.ok()) << one.error().msg;
  EXPECT_EQ(one->dumps, 1);
  EXPECT_EQ(one->deleted, 0);
  Insert(ns, "udp", 7002);
  auto two = FlushIn(ns, AF_INET, {7001, 7002});
  ASSERT_TRUE(two.ok()) << two.error().msg;
  EXPECT_EQ(two->dumps, 2);
  EXPECT_EQ(two->deleted, 1);
  EXPECT_EQ(Count(ns, "tcp", 80), 1);
}

}  // namespace
}  // namespace nodegate::conntrack
