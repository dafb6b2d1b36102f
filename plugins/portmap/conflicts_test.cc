// The pure parts of "hostPortConflicts": the overlap rule, claims and ownership, the libcni
// cache's pod, and the config key.
#include "plugins/portmap/conflicts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lib/cni/conf.h"
#include "plugins/portmap/installed_mappings.h"

namespace nodegate::portmap {
namespace {

net::IpAddress Ip(const char* text) { return *net::IpAddress::Parse(text); }

InstalledMapping Installed(std::optional<const char*> host_ip, Protocol protocol, int port) {
  InstalledMapping m;
  m.family = net::Family::kV4;
  if (host_ip) m.host_ip = Ip(*host_ip);
  m.protocol = protocol;
  m.host_port = port;
  return m;
}

TEST(HostPortConflicts, Overlap) {
  const Claim any{net::Family::kV4, std::nullopt, Protocol::kTcp, 8080};
  const Claim one{net::Family::kV4, Ip("10.0.0.1"), Protocol::kTcp, 8080};
  EXPECT_TRUE(Overlaps(Installed(std::nullopt, Protocol::kTcp, 8080), any));
  EXPECT_TRUE(Overlaps(Installed(std::nullopt, Protocol::kTcp, 8080), one));
  EXPECT_TRUE(Overlaps(Installed("10.0.0.1", Protocol::kTcp, 8080), any));
  EXPECT_TRUE(Overlaps(Installed("10.0.0.1", Protocol::kTcp, 8080), one));
  EXPECT_TRUE(Overlaps(Installed("0.0.0.0", Protocol::kTcp, 8080), one));
  EXPECT_FALSE(Overlaps(Installed("10.0.0.2", Protocol::kTcp, 8080), one));
  EXPECT_FALSE(Overlaps(Installed(std::nullopt, Protocol::kUdp, 8080), any));
  EXPECT_FALSE(Overlaps(Installed(std::nullopt, Protocol::kTcp, 8081), any));
  Claim v6 = any;
  v6.family = net::Family::kV6;
  EXPECT_FALSE(Overlaps(Installed(std::nullopt, Protocol::kTcp, 8080), v6));
}

TEST(HostPortConflicts, ClaimsAndOwnership) {
  Config config;
  config.network_name = "rnet";
  config.container_id = "ctr1";
  config.container_v4 = net::IpPrefix::Parse("10.88.0.2/16");
  config.mappings = {{8080, 80, Protocol::kTcp, Ip("0.0.0.0")},
                     {53, 53, Protocol::kUdp, std::nullopt},
                     {443, 443, Protocol::kTcp, Ip("fd00::1")}};
  const auto claims = ClaimsOf(config);  // no IPv6 address: v4 only
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_FALSE(claims[0].host_ip);  // 0.0.0.0 is every address
  InstalledMapping m = Installed(std::nullopt, Protocol::kTcp, 8080);
  m.container_id = "ctr1";
  m.network = "rnet";
  EXPECT_TRUE(OwnedBy(m, config));
  m.network = "";  // the reference's nftables rules carry the ID only
  EXPECT_TRUE(OwnedBy(m, config));
  m.network = "other";
  EXPECT_FALSE(OwnedBy(m, config));
}

Result<Config> ParseWith(const std::string& value) {
  const std::string text = R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap")" +
                           (value.empty() ? "" : R"(,"HostPortConflicts":)" + value) + "}";
  NG_ASSIGN_OR_RETURN(auto conf, cni::ParseNetConf(text, ConfigShape()));
  return ParseConfig(conf, {.container_id = "c", .ifname = "eth0", .purpose = Purpose::kValidate});
}

TEST(HostPortConflicts, ConfigKey) {
  ASSERT_TRUE(ParseWith("").ok());
  EXPECT_EQ(ParseWith("").value().host_port_conflicts, HostPortConflicts::kAllow);
  EXPECT_EQ(ParseWith(R"("reject")").value().host_port_conflicts, HostPortConflicts::kReject);
  EXPECT_EQ(ParseWith(R"("allow")").value().host_port_conflicts, HostPortConflicts::kAllow);
  EXPECT_EQ(ParseWith(R"("deny")").error().code, kErrInvalidConfig);
  EXPECT_EQ(ParseWith("true").error().code, kErrInvalidConfig);
}

}  // namespace
}  // namespace nodegate::portmap
