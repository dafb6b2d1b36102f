#include "kube/decode/list_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace nodegate::kube {
namespace {

using nlohmann::json;

struct Collected {
  std::vector<std::string> items;
  ListStream stream{[this](std::string_view item) { items.emplace_back(item); }};
};

// A list whose items have strings with escaped quotes and backslashes, braces inside strings,
// nested arrays and objects, and a last-applied-configuration (JSON inside a JSON string).
std::string SampleList(int n) {
  json list = {{"kind", "PodList"},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", "4711"}, {"continue", "tok\"en"}}},
               {"items", json::array()}};
  for (int i = 0; i < n; ++i) {
    json inner = {{"metadata", {{"name", "p" + std::to_string(i)}}}, {"x", "}{\"]["}};
    list["items"].push_back(
        {{"metadata",
          {{"name", "pod-" + std::to_string(i)},
           {"annotations",
            {{"kubectl.kubernetes.io/last-applied-configuration", inner.dump()},
             {"odd", std::string("ends with a backslash \\") + std::string(i % 7, '\\')}}}}},
         {"spec", {{"containers", {{{"name", "c"}, {"args", {"{", "}", "[", "]", "\"\\"}}}}}}},
         {"n", i},
         {"e", json::array({json::object(), json::array(), nullptr, true, 1.5})}});
  }
  return list.dump();
}

std::vector<std::string> ExpectedItems(const std::string& text) {
  std::vector<std::string> out;
  const json list = json::parse(text);
  for (const json& item : list["items"]) {
    out.push_back(item.dump());
  }
  return out;
}

TEST(ListStreamTest, WholeBodyAtOnce) {
  const std::string text = SampleList(20);
  Collected c;
  ASSERT_TRUE(c.stream.Feed(text).ok());
  ASSERT_TRUE(c.stream.Finish().ok());
  std::vector<std::string> got;
  for (const std::string& item : c.items) {
    got.push_back(json::parse(item).dump());  // each item is a whole JSON text
  }
  EXPECT_EQ(got, ExpectedItems(text));
  EXPECT_EQ(c.stream.resource_version(), "4711");
  EXPECT_EQ(c.stream.continue_token(), "tok\"en");
  EXPECT_EQ(c.stream.kind(), "PodList");
  EXPECT_EQ(c.stream.items(), 20u);
}

// Every split of the body into pieces gives the same items: byte by byte, and random cuts.
TEST(ListStreamTest, AnyChunking) {
  const std::string text = SampleList(12);
  const std::vector<std::string> want = ExpectedItems(text);
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    Collected c;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t n = round == 0 ? 1 : std::uniform_int_distribution<size_t>(1, 97)(random);
      n = std::min(n, text.size() - pos);
      ASSERT_TRUE(c.stream.Feed(std::string_view(text).substr(pos, n)).ok()) << round;
      pos += n;
    }
    ASSERT_TRUE(c.stream.Finish().ok());
    std::vector<std::string> got;
    for (const std::string& item : c.items) {
      got.push_back(json::parse(item).dump());
    }
    ASSERT_EQ(got, want) << "round " << round;
    EXPECT_EQ(c.stream.resource_version(), "4711");
  }
}

TEST(ListStreamTest, MembersInAnyOrderAndEmptyLists) {
  for (const char* text :
       {R"({"items":[],"metadata":{"resourceVersion":"9"}})",
        R"( { "metadata" : {"resourceVersion":"9"} , "items" : null } )",
        R"({"kind":"NodeList","items":[ ],"metadata":{"resourceVersion":"9"}})"}) {
    Collected c;
    ASSERT_TRUE(c.stream.Feed(text).ok()) << text;
    ASSERT_TRUE(c.stream.Finish().ok()) << text;
    EXPECT_TRUE(c.items.empty());
    EXPECT_EQ(c.stream.resource_version(), "9");
  }
}

TEST(ListStreamTest, MalformedBodiesAreErrors) {
  const std::vector<std::string> bad = {
      "[1,2]",                                   // not an object
      R"({"items":[1]})",                        // an item that is no object
      R"({"items":[{}],})",                      // a trailing comma
      R"({"items":[{},]})",                      // a trailing comma in items
      R"({"items":[{}]} x)",                     // data after the end
      R"({"a" 1})",                              // no colon
      R"({"items":[{"a":"b"]]})",                // a bracket closing a brace
      R"({"metadata":{"resourceVersion":"1"})",  // cut short (at Finish)
      R"({"items":[{"s":"never closed}]})",      // a string that never ends
  };
  for (const std::string& text : bad) {
    Collected c;
    const bool fed = c.stream.Feed(text).ok();
    EXPECT_FALSE(fed && c.stream.Finish().ok()) << text;
  }
}

TEST(ListStreamTest, ItemsOverTheLimitAreRefused) {
  std::vector<std::string> items;
  ListStream stream([&](std::string_view item) { items.emplace_back(item); },
                    /*max_item_bytes=*/64);
  const std::string big = R"({"items":[{"a":")" + std::string(100, 'x') + R"("}]})";
  // Fed in pieces, so the item has to be kept between calls.
  bool failed = false;
  for (size_t pos = 0; pos < big.size() && !failed; pos += 10) {
    failed = !stream.Feed(std::string_view(big).substr(pos, 10)).ok();
  }
  EXPECT_TRUE(failed);
  EXPECT_TRUE(items.empty());
}

TEST(ListStreamTest, BackslashesAndQuotesAcrossBlocksAndChunks) {
  // Items whose strings hold runs of backslashes of every length next to quotes, braces and
  // 64-byte boundaries; any chunking gives the same items, each a whole JSON text.
  std::mt19937 random(7);
  json list = {{"metadata", {{"resourceVersion", "1"}}}, {"items", json::array()}};
  for (int i = 0; i < 60; ++i) {
    std::string text;
    const int n = static_cast<int>(random() % 300);
    for (int j = 0; j < n; ++j) {
      const char* pieces[] = {"\\", "\"", "{", "}", "[", "]", "a", "bc", "\\\"", " "};
      text += pieces[random() % 10];
    }
    list["items"].push_back({{"metadata", {{"name", "p" + std::to_string(i)}}},
                             {"text", text},
                             {"pad", std::string(random() % 70, 'x')},
                             {"k:{\"name\":\"c\"}", {{"f:image", json::object()}}}});
  }
  const std::string body = list.dump();
  const std::vector<std::string> want = ExpectedItems(body);
  for (size_t piece : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, body.size()}) {
    Collected c;
    for (size_t off = 0; off < body.size(); off += piece) {
      ASSERT_TRUE(c.stream.Feed(std::string_view(body).substr(off, piece)).ok()) << piece;
    }
    ASSERT_TRUE(c.stream.Finish().ok());
    std::vector<std::string> got;
    for (const std::string& item : c.items) {
      got.push_back(json::parse(item).dump());
    }
    EXPECT_EQ(got, want) << "pieces of " << piece;
  }
}

}  // namespace
}  // namespace nodegate::kube
