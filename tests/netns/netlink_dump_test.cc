// A netlink dump the kernel interrupts (NLM_F_DUMP_INTR: the dumped objects changed between
// two parts of it) is asked again by lib/netlink's Socket::Dump, and its caller sees one whole,
// consistent answer. In a throwaway namespace: a bridge link with 600 addresses, so a dump
// spans several parts, while another thread keeps adding and removing one address.
#include <gtest/gtest.h>
#include <net/if.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "lib/net/ip.h"
#include "lib/netlink/address.h"
#include "lib/netlink/socket.h"
#include "lib/sys/netns.h"
#include "tests/support/netns_fixture.h"

namespace nodegate::netlink {
namespace {

using nodegate::testing::TestNetns;

constexpr int kAddresses = 600;

TEST(NetlinkDump, InterruptedDumpsAreAskedAgainAndSeenWhole) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-dump");
  ns.MustRun("ip link add d0 type bridge && ip link set d0 up");
  std::string batch;
  for (int i = 0; i < kAddresses; ++i) {
    batch += "addr add 10.40." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) +
             "/32 dev d0\n";
  }
  ns.MustRun("ip -batch - <<'EOF'\n" + batch + "EOF");

  auto in_ns = sys::NetnsScope::Enter(ns.path());
  ASSERT_TRUE(in_ns.ok()) << in_ns.error().msg;
  const int index = static_cast<int>(::if_nametoindex("d0"));
  ASSERT_GT(index, 0);
  auto reader = Socket::Open();
  auto writer = Socket::Open();
  ASSERT_TRUE(reader.ok() && writer.ok());

  // One address added and removed every half millisecond or so: a dump of the 600 (a few
  // parts) now and then spans a change, as a link's own addresses change while it comes up.
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    const auto extra = *net::IpPrefix::Parse("10.41.0.1/32");
    while (!stop.load()) {
      (void)AddAddress(*writer, index, extra);
      std::this_thread::sleep_for(std::chrono::microseconds(250));
      (void)DeleteAddress(*writer, index, extra);
      std::this_thread::sleep_for(std::chrono::microseconds(250));
    }
  });
  struct StopChurn {
    std::atomic<bool>& stop;
    std::thread& churn;
    ~StopChurn() {
      stop = true;
      churn.join();
    }
  } stop_churn{stop, churn};
  int dumps = 0;
  for (; dumps < 3000 && reader->dumps_repeated() < 20; ++dumps) {
    auto listed = ListAddresses(*reader, index, net::Family::kV4);
    ASSERT_TRUE(listed.ok()) << listed.error().msg << " (dump " << dumps << ")";
    // Whole: every fixed address once, and the churned one at most once.
    ASSERT_GE(listed->size(), static_cast<size_t>(kAddresses));
    ASSERT_LE(listed->size(), static_cast<size_t>(kAddresses + 1));
  }
  // The test means something only if the kernel did interrupt dumps.
  EXPECT_GT(reader->dumps_repeated(), 0) << "no dump was interrupted in " << dumps << " dumps";
}

}  // namespace
}  // namespace nodegate::netlink
