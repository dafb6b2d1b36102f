// netns tier: DeleteByDestinationPort against the kernel's conntrack table, in a throwaway
// namespace, on both of its paths (a filtered dump per port, one dump for many ports).
#include "lib/conntrack/conntrack.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "lib/sys/detached.h"
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

// In a process that allows detached work (a plugin's), the flush is only registered: it runs
// in the helper the process starts when it exits (lib/netfilter/release.h), in the namespace
// the process was in. The test process is the helper's subreaper and waits for it.
TEST(Conntrack, FlushesInTheHelperAfterTheProcessExits) {
  NG_REQUIRE_ROOT();
  // Where detached work is not allowed (this test process), nothing is registered.
  EXPECT_FALSE(DeleteByDestinationPortAfterExit(AF_INET, IPPROTO_UDP, {7001}));
  TestNetns ns("ng-ctx");
  Insert(ns, "udp", 7001);
  Insert(ns, "udp", 7002);
  Insert(ns, "udp", 7001, /*v6=*/true);
  Insert(ns, "udp", 7003, /*v6=*/true);
  int registered[2], go[2];
  ASSERT_EQ(::pipe(registered), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto scope = sys::NetnsScope::Enter(ns.path());
    sys::AllowDetachedWork();
    const char answer = scope.ok() &&
                                DeleteByDestinationPortAfterExit(AF_INET, IPPROTO_UDP, {7001}) &&
                                DeleteByDestinationPortAfterExit(AF_INET6, IPPROTO_UDP, {7001}) &&
                                DeleteByDestinationPortAfterExit(AF_INET6, IPPROTO_UDP, {7003})
                            ? 'y'
                            : 'n';
    char ignored;
    if (::write(registered[1], &answer, 1) != 1 || ::read(go[0], &ignored, 1) != 1) ::_exit(2);
    std::exit(0);  // runs the atexit handlers: the helper starts here
  }
  char answer = 0;
  ASSERT_EQ(::read(registered[0], &answer, 1), 1);
  EXPECT_EQ(answer, 'y');
  // Registered, not done: the entries are all there while the process lives.
  EXPECT_EQ(Count(ns, "udp", 7001), 1);
  EXPECT_EQ(Count(ns, "udp", 7001, /*v6=*/true), 1);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  while (::wait(nullptr) > 0 || errno == EINTR) {
  }  // the helper, reparented to this process
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  for (int fd : {registered[0], registered[1], go[0], go[1]}) ::close(fd);
  EXPECT_EQ(Count(ns, "udp", 7001), 0);
  EXPECT_EQ(Count(ns, "udp", 7001, /*v6=*/true), 0);
  EXPECT_EQ(Count(ns, "udp", 7003, /*v6=*/true), 0);
  EXPECT_EQ(Count(ns, "udp", 7002), 1);  // not asked for
}

}  // namespace
}  // namespace nodegate::conntrack
