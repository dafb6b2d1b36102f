#include "webhook/handler/duration.h"

#include <gtest/gtest.h>

namespace nodegate::webhook {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDuration, GoForms) {
  EXPECT_EQ(ParseDuration("5s"), nanoseconds(seconds(5)));
  EXPECT_EQ(ParseDuration("500ms"), nanoseconds(milliseconds(500)));
  EXPECT_EQ(ParseDuration("1m30s"), nanoseconds(seconds(90)));
  EXPECT_EQ(ParseDuration("1.5h"), nanoseconds(seconds(5400)));
  EXPECT_EQ(ParseDuration("10us"), nanoseconds(10000));
  EXPECT_EQ(ParseDuration("0"), nanoseconds(0));
}

TEST(ParseDuration, RefusesOtherText) {
  for (const char* text : {"", "5", "s", "-5s", "5x", "1..5s", ".s", "5s junk", "1e3s"}) {
    EXPECT_FALSE(ParseDuration(text).has_value()) << text;
  }
}

TEST(QueryParameter, FindsTheTimeoutTheApiServerAdds) {
  EXPECT_EQ(QueryParameter("/validate?timeout=5s", "timeout"), "5s");
  EXPECT_EQ(QueryParameter("/validate?a=1&timeout=10s&b", "timeout"), "10s");
  EXPECT_EQ(QueryParameter("/validate?b", "b"), "");
  EXPECT_FALSE(QueryParameter("/validate", "timeout").has_value());
  EXPECT_FALSE(QueryParameter("/validate?timeouts=1s", "timeout").has_value());
}

}  // namespace
}  // namespace nodegate::webhook
