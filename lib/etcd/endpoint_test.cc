#include "lib/etcd/endpoint.h"

#include <gtest/gtest.h>

namespace nodegate::etcd {
namespace {

TEST(ParseEndpoint, Forms) {
  auto e = ParseEndpoint("https://127.0.0.1:2381");
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 2381);
  EXPECT_TRUE(e->host_is_ip());
  EXPECT_EQ(e->Authority(), "127.0.0.1:2381");

  e = ParseEndpoint("http://etcd-0.example:2379/");
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->host, "etcd-0.example");
  EXPECT_FALSE(e->host_is_ip());

  e = ParseEndpoint("https://[fd00::5]:12379");
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_EQ(e->host, "fd00::5");
  EXPECT_EQ(e->port, 12379);
  EXPECT_EQ(e->Authority(), "[fd00::5]:12379");

  e = ParseEndpoint("https://etcd");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->port, 2379);
}

TEST(ParseEndpoint, RefusesWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1:2379", "scheme"},          {"ftp://127.0.0.1:2379", "scheme"},
      {"https://127.0.0.1:0", "port"},       {"https://127.0.0.1:65536", "port"},
      {"https://127.0.0.1:", "port"},        {"https://127.0.0.1:23x", "port"},
      {"https://127.0.0.1:2379/v3", "path"}, {"https://user@127.0.0.1:2379", "user info"},
      {"https://fd00::5:2379", "brackets"},  {"https://[10.0.0.1]:2379", "IPv6"},
      {"https://[fd00::5", "unterminated"},  {"https://", "host"},
      {"https://bad host:2379", "neither"},
  };
  for (const auto& [url, why] : cases) {
    auto e = ParseEndpoint(url);
    ASSERT_FALSE(e.ok()) << url;
    EXPECT_EQ(e.error().code, kErrInvalidConfig) << url;
    EXPECT_NE(e.error().msg.find(why), std::string::npos) << url << ": " << e.error().msg;
  }
}

}  // namespace
}  // namespace nodegate::etcd
