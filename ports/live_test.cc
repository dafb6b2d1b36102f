// ReadLiveClaims with a fake mapped source: which ports it asks the source for, and what it
// keeps. The listening claims come from this process's own network namespace (read only).
#include "ports/live.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace nodegate::ports {
namespace {

struct FakeSource {
  std::vector<PortFilter> asked;
  MappedSource Source() {
    return [this](const PortFilter& ports) -> Result<std::vector<MappedClaim>> {
      asked.push_back(ports);
      std::vector<MappedClaim> claims;
      for (int port : {8080, 9090}) {
        MappedClaim m;
        m.key = {"0.0.0.0", "TCP", port};
        m.container_id = "c" + std::to_string(port);
        claims.push_back(m);
      }
      return claims;
    };
  }
};

std::string EmptyCache() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ports-live-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ReadLiveClaims, NoPortsReadsNothing) {
  FakeSource fake;
  auto live = ReadLiveClaims(fake.Source(), EmptyCache(), std::set<int>{});
  ASSERT_TRUE(live.ok()) << live.error().msg;
  EXPECT_TRUE(fake.asked.empty());
  EXPECT_TRUE(live->mapped.empty());
  EXPECT_TRUE(live->listening.empty());
}

TEST(ReadLiveClaims, AFewPortsAreAskedForByKey) {
  FakeSource fake;
  auto live = ReadLiveClaims(fake.Source(), EmptyCache(), std::set<int>{8080});
  ASSERT_TRUE(live.ok()) << live.error().msg;
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_EQ(fake.asked[0], PortFilter(std::set<int>{8080}));
  for (const ListeningClaim& l : live->listening) EXPECT_EQ(l.key.port, 8080);
}

// A manifest may declare thousands of host ports; keyed reads cost per port, so past a few the
// source is read whole and its claims filtered to the ports asked for.
TEST(ReadLiveClaims, ManyPortsReadTheSourceWholeAndKeepOnlyThoseAsked) {
  std::set<int> many;
  for (int port = 8000; port < 8100; ++port) many.insert(port);  // 8080 in, 9090 out
  FakeSource fake;
  auto live = ReadLiveClaims(fake.Source(), EmptyCache(), many);
  ASSERT_TRUE(live.ok()) << live.error().msg;
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_EQ(fake.asked[0], std::nullopt);
  ASSERT_EQ(live->mapped.size(), 1u);
  EXPECT_EQ(live->mapped[0].key.port, 8080);
  for (const ListeningClaim& l : live->listening) EXPECT_TRUE(many.contains(l.key.port));
}

}  // namespace
}  // namespace nodegate::ports
