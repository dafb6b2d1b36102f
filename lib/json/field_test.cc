#include "lib/json/field.h"

#include <gtest/gtest.h>

#include <limits>

namespace nodegate::json_field {
namespace {

Json Parse(std::string_view text) { return Json::parse(text); }

Error Worded(const FieldMismatch& m) {
  return Error(kErrDecode, std::string(m.key) + " must be " + std::string(m.described()));
}

TEST(JsonField, AbsentAndNullAreNotGiven) {
  const Json j = Parse(R"({"a": null})");
  for (const char* key : {"a", "missing"}) {
    EXPECT_FALSE(ReadString(j, key).given());
    EXPECT_FALSE(ReadString(j, key).mismatched());
    EXPECT_FALSE(ReadBool(j, key).given());
    EXPECT_FALSE(ReadInteger(j, key).given());
    EXPECT_FALSE(ReadObject(j, key).given());
    EXPECT_FALSE(ReadList(j, key).given());
    EXPECT_FALSE(ReadStringList(j, key).given());
    EXPECT_FALSE(ReadStringList(j, key).mismatched());
    EXPECT_EQ(GivenField(j, key), nullptr);
  }
}

TEST(JsonField, NullIsAMismatchWhenAsked) {
  const Json j = Parse(R"({"a": null})");
  const auto read = ReadString(j, "a", NullIs::kMismatch);
  ASSERT_TRUE(read.mismatched());
  EXPECT_TRUE(read.mismatch().found->is_null());
  EXPECT_EQ(read.mismatch().want, JsonType::kString);
  EXPECT_FALSE(ReadString(j, "missing", NullIs::kMismatch).mismatched());
  EXPECT_TRUE(ReadList(j, "a", NullIs::kMismatch).mismatched());
}

TEST(JsonField, ReadsEachType) {
  const Json j = Parse(R"({"s": "x", "b": false, "i": -7, "o": {"k": 1}, "l": [1, "a"],
                           "sl": ["a", "b"]})");
  EXPECT_EQ(ReadString(j, "s").value(), "x");
  EXPECT_EQ(ReadBool(j, "b").value(), false);
  EXPECT_EQ(ReadInteger(j, "i").value(), -7);
  EXPECT_EQ(ReadObject(j, "o").value(), &j["o"]);
  EXPECT_EQ(ReadList(j, "l").value(), &j["l"]);
  EXPECT_EQ(ReadStringList(j, "sl").value(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ReadStringList(j, "missing").value_or({}), std::vector<std::string>());
}

TEST(JsonField, MismatchNamesKeyTypeAndValue) {
  const Json j = Parse(R"({"s": 1, "b": "true", "o": [], "l": {}})");
  const auto s = ReadString(j, "s");
  ASSERT_TRUE(s.mismatched());
  EXPECT_EQ(s.mismatch().key, "s");
  EXPECT_EQ(s.mismatch().described(), "a string");
  EXPECT_EQ(s.mismatch().found, &j["s"]);
  EXPECT_FALSE(s.mismatch().index.has_value());
  EXPECT_FALSE(s.value().has_value());
  EXPECT_EQ(ReadBool(j, "b").mismatch().described(), "a boolean");
  EXPECT_EQ(ReadObject(j, "o").mismatch().described(), "an object");
  EXPECT_EQ(ReadList(j, "l").mismatch().described(), "a list");
  EXPECT_EQ(ReadInteger(j, "b").mismatch().described(), "an integer");
  EXPECT_EQ(ReadStringList(j, "s").mismatch().described(), "a list of strings");
}

// Go's int: an integer that fits in 64 bits; a float is no integer even when whole.
TEST(JsonField, IntegersAsGoReadsThem) {
  const Json j = Parse(R"({"max": 9223372036854775807, "min": -9223372036854775808,
                           "over": 9223372036854775808, "float": 8080.0, "exp": 1e3,
                           "text": "80"})");
  EXPECT_EQ(ReadInteger(j, "max").value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ReadInteger(j, "min").value(), std::numeric_limits<int64_t>::min());
  for (const char* key : {"over", "float", "exp", "text"}) {
    const auto read = ReadInteger(j, key);
    EXPECT_TRUE(read.mismatched()) << key;
    EXPECT_EQ(read.mismatch().found, &j[key]) << key;
  }
  EXPECT_TRUE(IsGoInt(Json(0)));
  EXPECT_FALSE(IsGoInt(Json(1.0)));
  EXPECT_FALSE(IsGoInt(Json(std::numeric_limits<uint64_t>::max())));
}

TEST(JsonField, StringListMismatchPointsAtTheElement) {
  const Json j = Parse(R"({"l": ["a", 2, null]})");
  const auto read = ReadStringList(j, "l");
  ASSERT_TRUE(read.mismatched());
  EXPECT_EQ(read.mismatch().index, 1u);
  EXPECT_EQ(read.mismatch().found, &j["l"][1]);
}

TEST(JsonField, NonObjectHasNoMembers) {
  for (const char* text : {"[1]", "\"s\"", "null", "3"}) {
    const Json j = Parse(text);
    EXPECT_FALSE(ReadString(j, "k").given()) << text;
    EXPECT_FALSE(ReadString(j, "k").mismatched()) << text;
    EXPECT_EQ(GivenField(j, "k"), nullptr) << text;
    EXPECT_EQ(StringOrEmpty(j, "k"), "") << text;
  }
}

TEST(JsonField, KeysAreExact) {
  const Json j = Parse(R"({"hostPort": 80})");
  EXPECT_TRUE(ReadInteger(j, "hostPort").given());
  EXPECT_FALSE(ReadInteger(j, "HostPort").given());
}

TEST(JsonField, GetWordsTheMismatchTheCallersWay) {
  const Json j = Parse(R"({"s": "x", "n": 1})");
  auto given = ReadString(j, "s").Get(Worded);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, std::optional<std::string>("x"));
  auto absent = ReadString(j, "missing").Get(Worded);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(*absent, std::nullopt);
  auto wrong = ReadString(j, "n").Get(Worded);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, kErrDecode);
  EXPECT_EQ(wrong.error().msg, "n must be a string");

  auto fallback = ReadBool(j, "missing").GetOr(true, Worded);
  ASSERT_TRUE(fallback.ok());
  EXPECT_TRUE(*fallback);
  auto wrong_bool = ReadBool(j, "s").GetOr(true, Worded);
  ASSERT_FALSE(wrong_bool.ok());
  EXPECT_EQ(wrong_bool.error().msg, "s must be a boolean");
}

TEST(JsonField, StringOrEmpty) {
  const Json j = Parse(R"({"s": "x", "n": 1, "z": null})");
  EXPECT_EQ(StringOrEmpty(j, "s"), "x");
  EXPECT_EQ(StringOrEmpty(j, "n"), "");
  EXPECT_EQ(StringOrEmpty(j, "z"), "");
  EXPECT_EQ(StringOrEmpty(j, "missing"), "");
}

TEST(JsonField, MemberAtWalksObjectsOnly) {
  const Json j = Parse(R"({"spec": {"nodeName": "n1", "list": [1], "z": null, "n": 3}})");
  ASSERT_NE(MemberAt(j, {"spec", "nodeName"}), nullptr);
  EXPECT_EQ(*MemberAt(j, {"spec", "nodeName"}), "n1");
  ASSERT_NE(MemberAt(j, {"spec", "z"}), nullptr);  // a null member is there
  EXPECT_TRUE(MemberAt(j, {"spec", "z"})->is_null());
  EXPECT_EQ(MemberAt(j, {"spec", "missing"}), nullptr);
  EXPECT_EQ(MemberAt(j, {"spec", "list", "0"}), nullptr);  // a list is not walked into
  EXPECT_EQ(MemberAt(j, {"spec", "n", "x"}), nullptr);
  EXPECT_EQ(MemberAt(j, {}), &j);
  EXPECT_EQ(StringAt(j, {"spec", "nodeName"}), "n1");
  EXPECT_EQ(StringAt(j, {"spec", "n"}), "");
  EXPECT_EQ(StringAt(j, {"spec", "z"}), "");
  EXPECT_EQ(StringAt(j, {"spec", "missing", "deeper"}), "");
}

}  // namespace
}  // namespace nodegate::json_field
