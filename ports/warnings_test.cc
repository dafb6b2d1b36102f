// admit --live warnings: a candidate's host ports against live listeners and mappings.

#include "ports/warnings.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"

namespace nodegate::ports {
namespace {

TEST(LiveWarningsFor, ListenerAndMappingOfAnotherPod) {
  const admit::Pod pod =
      admit::testing::MakePod("web").Namespace("ns").Container("web").HostPort("//8080").Obj();
  LiveClaims live;
  live.listening.push_back({{"::", "TCP", 8080}, 42, "python3", std::nullopt});
  live.listening.push_back({{"0.0.0.0", "UDP", 8080}, 43, "dnsmasq", std::nullopt});
  live.mapped.push_back({{"0.0.0.0", "TCP", 8080},
                         "iptables-nft",
                         std::string(64, 'c'),
                         "cbr0",
                         "10.88.0.2:80",
                         "ns/other"});
  live.mapped.push_back(
      {{"0.0.0.0", "TCP", 8080}, "nftables", "own", "cbr0", "10.88.0.3:80", "ns/web"});
  const auto warnings = LiveWarningsFor(pod, live);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].kind, "port-listening");
  EXPECT_EQ(warnings[0].key.ToString(), "8080/TCP on 0.0.0.0");
  EXPECT_EQ(warnings[0].detail, "process python3 (pid 42) listens on [::]:8080/TCP");
  EXPECT_EQ(warnings[1].kind, "port-mapped");
  EXPECT_EQ(warnings[1].detail,
            "portmap maps 0.0.0.0:8080/TCP to 10.88.0.2:80 for pod ns/other, container "
            "cccccccccccc (network cbr0, iptables-nft)");
}

TEST(LiveWarningsFor, NothingOnOtherPorts) {
  const admit::Pod pod = admit::testing::MakePod("web").Container("web").HostPort("//8080").Obj();
  LiveClaims live;
  live.listening.push_back({{"0.0.0.0", "TCP", 8081}, 42, "python3", std::nullopt});
  EXPECT_TRUE(LiveWarningsFor(pod, live).empty());
}

}  // namespace
}  // namespace nodegate::ports
