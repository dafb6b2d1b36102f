// netns tier: DeleteByDestinationPort against the kernel's conntrack table, in a throwaway
// namespace, on both of its paths (a filtered dump per port, one dump for many ports).
#include "lib/conntrack/conntrack.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <iterator>
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
  return nodegate::testing::CountListed(ns, std::string("conntrack -L ") +
                                                (v6 ? "-f ipv6 " : "-f ipv4 ") + "-p " + proto +
                                                " --dport " + std::to_string(port));
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
// Makes clone calls that would start a child with SIGCHLD as its exit signal (fork, and
// sys::SpawnDetachedAtExit's clone) fail with EAGAIN, as a full pids cgroup does, in this
// process from now on. Other clones (threads, LeakSanitizer's tracer) still work. False when
// the filter cannot be installed.
bool RefuseChildProcesses() {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  const sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),  // glibc then uses clone
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      // The flags' low byte is the exit signal (the low word of args[0] on little endian).
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGCHLD, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  const sock_fprog filter{static_cast<unsigned short>(std::size(program)),
                          const_cast<sock_filter*>(program)};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

// What became of a process that registered flushes of UDP ports 7001 (both families) and
// 7003 (IPv6) for after its exit, in a namespace that also holds 7002 (IPv4).
struct AfterExit {
  bool registered = false;
  bool exited_cleanly = false;
  int descendants_left = 0;  // processes it left behind (the helper), reaped here
  // Entries of 7001 when it had registered but not yet exited, and once it had exited.
  int v4_before = -1, v6_before = -1, v4_at_exit = -1;
};

AfterExit RegisterAndExit(const TestNetns& ns, bool refuse_children) {
  AfterExit seen;
  int registered[2], go[2];
  if (::pipe(registered) != 0 || ::pipe(go) != 0) return seen;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t child = ::fork();
  if (child == 0) {
    auto scope = sys::NetnsScope::Enter(ns.path());
    sys::AllowDetachedWork();
    const bool ok = scope.ok() && (!refuse_children || RefuseChildProcesses()) &&
                    DeleteByDestinationPortAfterExit(AF_INET, IPPROTO_UDP, {7001}) &&
                    DeleteByDestinationPortAfterExit(AF_INET6, IPPROTO_UDP, {7001}) &&
                    DeleteByDestinationPortAfterExit(AF_INET6, IPPROTO_UDP, {7003});
    const char answer = ok ? 'y' : 'n';
    char ignored;
    if (::write(registered[1], &answer, 1) != 1 || ::read(go[0], &ignored, 1) != 1) ::_exit(2);
    std::exit(0);  // runs the atexit handlers: the helper starts here
  }
  char answer = 0;
  if (child > 0 && ::read(registered[0], &answer, 1) == 1) {
    seen.registered = answer == 'y';
    seen.v4_before = Count(ns, "udp", 7001);
    seen.v6_before = Count(ns, "udp", 7001, /*v6=*/true);
    (void)::write(go[1], "g", 1);
    int status = 0;
    if (::waitpid(child, &status, 0) == child) {
      seen.exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    seen.v4_at_exit = Count(ns, "udp", 7001);
    for (;;) {  // the helper, reparented to this process
      if (::wait(nullptr) > 0) {
        ++seen.descendants_left;
      } else if (errno != EINTR) {
        break;
      }
    }
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  for (int fd : {registered[0], registered[1], go[0], go[1]}) ::close(fd);
  return seen;
}

void InsertFourEntries(const TestNetns& ns) {
  Insert(ns, "udp", 7001);
  Insert(ns, "udp", 7002);
  Insert(ns, "udp", 7001, /*v6=*/true);
  Insert(ns, "udp", 7003, /*v6=*/true);
}

void ExpectOnlyTheAskedPortsFlushed(const TestNetns& ns) {
  EXPECT_EQ(Count(ns, "udp", 7001), 0);
  EXPECT_EQ(Count(ns, "udp", 7001, /*v6=*/true), 0);
  EXPECT_EQ(Count(ns, "udp", 7003, /*v6=*/true), 0);
  EXPECT_EQ(Count(ns, "udp", 7002), 1);  // not asked for
}

TEST(Conntrack, FlushesInTheHelperAfterTheProcessExits) {
  NG_REQUIRE_ROOT();
  // Where detached work is not allowed (this test process), nothing is registered.
  EXPECT_FALSE(DeleteByDestinationPortAfterExit(AF_INET, IPPROTO_UDP, {7001}));
  TestNetns ns("ng-ctx");
  InsertFourEntries(ns);
  const AfterExit seen = RegisterAndExit(ns, /*refuse_children=*/false);
  ASSERT_TRUE(seen.registered);
  EXPECT_TRUE(seen.exited_cleanly);
  // Registered, not done: the entries are all there while the process lives.
  EXPECT_EQ(seen.v4_before, 1);
  EXPECT_EQ(seen.v6_before, 1);
  EXPECT_GE(seen.descendants_left, 1);  // the helper did the flush
  ExpectOnlyTheAskedPortsFlushed(ns);
}

TEST(Conntrack, FlushesAtExitInTheProcessWhenNoHelperCanStart) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-ctn");
  InsertFourEntries(ns);
  const AfterExit seen = RegisterAndExit(ns, /*refuse_children=*/true);
  ASSERT_TRUE(seen.registered);
  EXPECT_TRUE(seen.exited_cleanly);
  EXPECT_EQ(seen.v4_before, 1);
  EXPECT_EQ(seen.v6_before, 1);
  EXPECT_EQ(seen.descendants_left, 0);
  EXPECT_EQ(seen.v4_at_exit, 0);  // done before the process was gone
  ExpectOnlyTheAskedPortsFlushed(ns);
}

}  // namespace
}  // namespace nodegate::conntrack
