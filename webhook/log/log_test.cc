#include "webhook/log/log.h"

#include <gtest/gtest.h>

namespace nodegate::webhook {
namespace {

using nlohmann::json;

TEST(LogTest, JsonLinesCarryTheFields) {
  const std::string line = FormatLine(
      LogFormat::kJson, Level::kInfo, "review",
      {{"uid", "r-1"}, {"pod", "default/web"}, {"verdict", "denied"}, {"latency_ms", 0.25}},
      "2026-12-06T05:00:00.000Z");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["time"], "2026-12-06T05:00:00.000Z");
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "review");
  EXPECT_EQ(j["uid"], "r-1");
  EXPECT_EQ(j["pod"], "default/web");
  EXPECT_EQ(j["verdict"], "denied");
  EXPECT_DOUBLE_EQ(j["latency_ms"].get<double>(), 0.25);
}

// A hostile pod name (bad UTF-8, a newline) cannot break the one-object-a-line contract.
TEST(LogTest, BadUtf8AndNewlinesStayInsideTheLine) {
  const std::string line = FormatLine(LogFormat::kJson, Level::kWarn, "review",
                                      {{"pod", std::string("ns/a\nb\xff\xfe")}}, "t");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["pod"], "ns/a\nb\xEF\xBF\xBD\xEF\xBF\xBD");  // each bad byte becomes U+FFFD
}

TEST(LogTest, TextForPeople) {
  EXPECT_EQ(FormatLine(LogFormat::kText, Level::kInfo, "serving", {{"port", 8443}}, "t"),
            "nodegate webhook: serving port=8443");
  EXPECT_EQ(FormatLine(LogFormat::kText, Level::kWarn, "stale", {{"resource", "pods"}}, "t"),
            "nodegate webhook: warn: stale resource=pods");
}

}  // namespace
}  // namespace nodegate::webhook
