// The result cache: the byte layout libcni writes and reads (the config in base64), and entries
// in libcni's layout read back.
#include "runtime/chain/cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace nodegate::runtime {
namespace {

TEST(CacheEntryTest, EncodesInGoStructOrderOmittingEmpties) {
  CachedAttachment e{.container_id = "c1", .network_name = "n", .ifname = "eth0", .config = "{}"};
  EXPECT_EQ(
      EncodeCacheEntry(e),
      R"({"kind":"cniCacheV1","containerId":"c1","config":"e30=","ifName":"eth0","networkName":"n"})");
  e.netns = "/run/netns/x";
  e.cni_args = {{"K", "V"}};
  e.capability_args = {{"portMappings", cni::Json::array()}};
  e.result = {{"cniVersion", "1.0.0"}};
  EXPECT_EQ(
      EncodeCacheEntry(e),
      R"({"kind":"cniCacheV1","containerId":"c1","config":"e30=","ifName":"eth0","networkName":"n",)"
      R"("netns":"/run/netns/x","cniArgs":[["K","V"]],"capabilityArgs":{"portMappings":[]},)"
      R"("result":{"cniVersion":"1.0.0"}})");
}

// CNI_ARGS, the netns path and IDs come from the command line as bytes: an entry holding
// invalid UTF-8 is written with U+FFFD in its place (as Go's encoder writes it), not thrown on.
TEST(CacheEntryTest, InvalidUtf8IsReplacedNotThrown) {
  CachedAttachment e{.container_id = "c1", .network_name = "n", .ifname = "eth0", .config = "{}"};
  e.netns = "/run/netns/\xff";
  e.cni_args = {{"K", "V\xfe"}};
  e.capability_args = {{"x", "\xff"}};
  std::string encoded;
  ASSERT_NO_THROW(encoded = EncodeCacheEntry(e));
  auto decoded = DecodeCacheEntry(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.error().msg;
  EXPECT_EQ(decoded->netns, "/run/netns/\xEF\xBF\xBD");
  ASSERT_EQ(decoded->cni_args.size(), 1u);
  EXPECT_EQ(decoded->cni_args[0].second, "V\xEF\xBF\xBD");
  EXPECT_EQ(decoded->capability_args["x"], "\xEF\xBF\xBD");
}

// In libcni's layout, with the "netns" key libcni 1.2+ adds; chain_test reads an entry podman
// 4.3.1 itself wrote.
constexpr char kPodmanEntry[] =
    R"({"kind":"cniCacheV1","containerId":"75fe02cce39c","config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoidG5ldCIsInBsdWdpbnMiOlt7InR5cGUiOiJicmlkZ2UifV19",)"
    R"("ifName":"eth0","networkName":"tnet","netns":"/run/netns/netns-1",)"
    R"("cniArgs":[["IgnoreUnknown","1"],["K8S_POD_NAMESPACE","c1"]],)"
    R"("capabilityArgs":{"portMappings":[{"hostPort":18080,"containerPort":80,"protocol":"tcp","hostIP":""}]},)"
    R"("result":{"cniVersion":"1.0.0","interfaces":[{"name":"tbr0","mac":"2a:d7:0f:f9:19:e5"}],)"
    R"("ips":[{"interface":2,"address":"203.0.113.2/24","gateway":"203.0.113.1"}],"dns":{}}})";

TEST(CacheEntryTest, DecodesWhatLibcniWrites) {
  auto e = DecodeCacheEntry(kPodmanEntry);
  ASSERT_TRUE(e.ok()) << e.error().msg;
  EXPECT_EQ(e->container_id, "75fe02cce39c");
  EXPECT_EQ(e->network_name, "tnet");
  EXPECT_EQ(e->ifname, "eth0");
  EXPECT_EQ(e->netns, "/run/netns/netns-1");
  EXPECT_EQ(e->config, R"({"cniVersion":"1.0.0","name":"tnet","plugins":[{"type":"bridge"}]})");
  ASSERT_EQ(e->cni_args.size(), 2u);
  EXPECT_EQ(e->cni_args[1].second, "c1");
  EXPECT_EQ(e->capability_args["portMappings"][0]["hostPort"], 18080);
  EXPECT_EQ(e->result["ips"][0]["address"], "203.0.113.2/24");
  // Round trip keeps every field.
  auto again = DecodeCacheEntry(EncodeCacheEntry(*e));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->config, e->config);
  EXPECT_EQ(again->result, e->result);
}

// libcni writes empty maps as nothing (omitempty); one read as {} must read back the same after
// we write it (found by make fuzz: tests/fuzz/crashes/cni_cache/empty-result-round-trip).
TEST(CacheEntryTest, EmptyMapsReadAsAbsent) {
  const auto entry =
      DecodeCacheEntry(R"({"kind":"cniCacheV1","containerId":"c","config":"","ifName":"eth0",)"
                       R"("networkName":"n","capabilityArgs":{},"result":{}})");
  ASSERT_TRUE(entry.ok()) << entry.error().msg;
  EXPECT_TRUE(entry->result.is_null());
  EXPECT_TRUE(entry->capability_args.empty());  // {} when absent, as before
  const auto again = DecodeCacheEntry(EncodeCacheEntry(*entry));
  ASSERT_TRUE(again.ok()) << again.error().msg;
  EXPECT_EQ(again->result, entry->result);
  EXPECT_EQ(again->capability_args, entry->capability_args);
}

TEST(CacheEntryTest, RejectsForeignFiles) {
  EXPECT_FALSE(DecodeCacheEntry("not json").ok());
  EXPECT_FALSE(DecodeCacheEntry(R"({"kind":"other"})").ok());
  EXPECT_FALSE(DecodeCacheEntry(R"({"kind":"cniCacheV1","config":"***"})").ok());
  // Found by make fuzz (tests/fuzz/crashes/cni_cache/kind-not-a-string): a "kind" that is not
  // a string threw out of the decoder and aborted `nodegate cni` and `nodegate ports`.
  for (const char* kind : {"[]", "[[\"IP\",\"10.1.0.5\"]]", "{}", "5", "true"}) {
    const auto entry = DecodeCacheEntry(std::string(R"({"kind":)") + kind + R"(,"config":""})");
    ASSERT_FALSE(entry.ok()) << kind;
    EXPECT_EQ(entry.error().msg, "cache entry: \"kind\" is not a string") << kind;
  }
}

TEST(CacheFilesTest, WriteReadListDelete) {
  char tmpl[] = "/tmp/ng-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  EXPECT_FALSE(CacheFilePath(dir, "n", "", "eth0").ok());
  auto none = ReadCacheEntry(dir, "n", "c1", "eth0");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  CachedAttachment e{
      .container_id = "c1", .network_name = "n", .ifname = "eth0", .netns = "/x", .config = "{}"};
  ASSERT_TRUE(WriteCacheEntry(dir, e).ok());
  e.container_id = "c2";
  ASSERT_TRUE(WriteCacheEntry(dir, e).ok());
  std::ofstream(dir + "/results/garbage") << "{";
  auto read = ReadCacheEntry(dir, "n", "c1", "eth0");
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ((*read)->netns, "/x");
  auto all = ListCachedAttachments(dir);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].container_id, "c1");
  EXPECT_EQ(all[1].container_id, "c2");
  ASSERT_TRUE(DeleteCacheEntry(dir, "n", "c1", "eth0").ok());
  ASSERT_TRUE(DeleteCacheEntry(dir, "n", "c1", "eth0").ok());  // idempotent
  EXPECT_EQ(ListCachedAttachments(dir).size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nodegate::runtime
