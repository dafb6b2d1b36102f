// YAML to JSON: scalar resolution, anchors, documents, and that hostile or malformed text ends
// in an error naming the line, in bounded time (inputs found by make fuzz included).

#include "admit/api/yaml.h"

#include <gtest/gtest.h>

#include <string>

namespace nodegate::admit {
namespace {

using nlohmann::json;

json OnlyDocument(std::string_view text) {
  auto docs = YamlDocumentsToJson(text);
  EXPECT_TRUE(docs.ok()) << text << "\n  error: " << docs.error().msg;
  if (!docs.ok() || docs->size() != 1) {
    ADD_FAILURE() << text << ": want one document";
    return nullptr;
  }
  return docs->front();
}

std::string ErrorOf(std::string_view text) {
  auto docs = YamlDocumentsToJson(text);
  return docs.ok() ? "<no error>" : docs.error().msg;
}

// As go-yaml v2 resolves them for the kubelet (YAML 1.1 booleans, Go integer syntax).
TEST(YamlTest, PlainScalarsResolveAsTheKubeletsDecoderDoesAndQuotedOnesStayStrings) {
  struct Case {
    std::string text;
    json want;
  };
  const std::vector<Case> cases = {
      {"v: 80", 80},
      {"v: -7", -7},
      {"v: 0x1F", 31},
      {"v: +12", 12},
      {"v: 0o17", 15},
      {"v: 9223372036854775808", 9223372036854775808ull},
      {"v: 0.5", 0.5},
      {"v: 1e3", 1000.0},
      {"v: .5", 0.5},
      {"v: true", true},
      {"v: False", false},
      {"v: ~", nullptr},
      {"v: null", nullptr},
      {"v:", nullptr},
      {"v: 1.2.3", "1.2.3"},
      {"v: 500m", "500m"},
      {"v: yes", true},
      {"v: On", true},
      {"v: y", true},
      {"v: NO", false},
      {"v: off", false},
      {"v: n", false},
      {"v: 0777", 511},
      {"v: 0b101", 5},
      {"v: -0x10", -16},
      {"v: 1_000", 1000},
      {"v: 08", 8.0},
      {"v: -9223372036854775808", INT64_MIN},
      {"v: 18446744073709551616", 18446744073709551616.0},
      {"v: .inf", ".inf"},
      {"v: yes please", "yes please"},
      {"v: 0x", "0x"},
      {"v: -x", "-x"},
      {"v: \"80\"", "80"},
      {"v: \"yes\"", "yes"},
      {"v: 'true'", "true"},
      {"v: !!str 80", "80"},
      {"v: ! 80", "80"},
      {"v: |\n  two\n  lines\n", "two\nlines\n"},
      {"v: >-\n  folded\n  text\n", "folded text"},
      {"v: \"\\xff\\u00e9\"", "\xC3\xBF\xC3\xA9"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(OnlyDocument(c.text), json({{"v", c.want}})) << c.text;
  }
}

TEST(YamlTest, StructuresAnchorsAndDocuments) {
  EXPECT_EQ(OnlyDocument("a: {b: [1, {c: d}]}\ne:\n- f\n- - g\n"),
            json::parse(R"({"a":{"b":[1,{"c":"d"}]},"e":["f",["g"]]})"));
  EXPECT_EQ(OnlyDocument("base: &b {cpu: 1, tags: [x]}\ncopy: *b\nname: &n web\nalias: *n\n"),
            json::parse(R"({"base":{"cpu":1,"tags":["x"]},"copy":{"cpu":1,"tags":["x"]},)"
                        R"("name":"web","alias":"web"})"));
  EXPECT_EQ(OnlyDocument("k: &k name\n*k : v\n"), json::parse(R"({"k":"name","name":"v"})"));
  auto docs = YamlDocumentsToJson("---\na: 1\n---\n---\n- x\n...\n");
  ASSERT_TRUE(docs.ok()) << docs.error().msg;
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0], json::parse(R"({"a":1})"));
  EXPECT_TRUE((*docs)[1].is_null());
  EXPECT_EQ((*docs)[2], json::parse(R"(["x"])"));
  EXPECT_TRUE(YamlDocumentsToJson("")->empty());
  // Anchors belong to their document.
  EXPECT_NE(ErrorOf("a: &x 1\n---\nb: *x\n").find("line 3: unknown anchor \"x\""),
            std::string::npos);
}

TEST(YamlTest, RefusalsNameTheLine) {
  EXPECT_EQ(ErrorOf("kind: Pod\nmetadata:\n  name: a\n  name: b\n"),
            "line 4: key \"name\" already set in this mapping (duplicate keys are refused, as the "
            "kubelet refuses them)");
  EXPECT_EQ(ErrorOf("a: 1\n? [x]\n: 2\n"), "line 2: mapping keys must be strings");
  EXPECT_EQ(ErrorOf("kind: Pod\n  metadata: [unclosed\n"),
            "invalid YAML: line 2, column 11: mapping values are not allowed in this context");
  EXPECT_EQ(ErrorOf("a: [1, 2\nb: 3\n"),
            "invalid YAML: line 2, column 2: did not find expected ',' or ']' (while parsing a "
            "flow sequence at line 1)");
  // Bytes that are not UTF-8, and control characters, are refused as the kubelet's decoder
  // refuses them; the message carries none of the bytes.
  EXPECT_EQ(ErrorOf("a: 1\nname: web-\xff\n"),
            "invalid YAML: line 2 (byte 15): invalid leading UTF-8 octet");
  EXPECT_EQ(ErrorOf(std::string("name: P\0g\n", 10)),
            "invalid YAML: line 1 (byte 7): control characters are not allowed");
}

TEST(YamlTest, NestingAndExpansionAreBounded) {
  const auto nested = [](int depth) {
    return std::string(static_cast<size_t>(depth), '[') +
           std::string(static_cast<size_t>(depth), ']');
  };
  EXPECT_TRUE(YamlDocumentsToJson(nested(kMaxDocumentDepth)).ok());
  EXPECT_EQ(ErrorOf(nested(kMaxDocumentDepth + 1)), "YAML nesting deeper than 64 levels (line 1)");
  EXPECT_NE(ErrorOf("a: " + nested(100000)).find("YAML nesting deeper than 64 levels"),
            std::string::npos);
  // A billion-laughs document: 9 levels of 9 aliases would expand to 9^9 values.
  std::string bomb = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  EXPECT_NE(ErrorOf(bomb).find("too many values"), std::string::npos) << ErrorOf(bomb);
}

// yaml-cpp 0.7, the previous parser, never returned on these (make fuzz found them): a ','
// outside a flow collection, and a flow mapping followed by ',' and an unterminated quote
// (tests/fuzz/crashes/admit_documents/yaml-cpp-flow-hang*). Each must end in an error.
TEST(YamlTest, InputsThatHungThePreviousParserEndInAnError) {
  for (const char* text :
       {",*d]\n", "- a\n,\n", "# c\n\n  ,x\n", "--- ,x\n", "---\n---\n,*d,*d]\nkind: Pod\n",
        "{}, \"", "{\"k\": \"P\"},\n\"s\n", "  {\"k\": \"P\"},\n   \"s: 2\n   ]\n m\n"}) {
    EXPECT_NE(ErrorOf(text).find("invalid YAML: line "), std::string::npos)
        << text << "\n  got: " << ErrorOf(text);
  }
  // Commas where YAML allows them still parse.
  EXPECT_EQ(OnlyDocument("m: {name: a, labels: {x: \"1,2\"}}\nl: [{n: c,\n    i: i}]\n"),
            json::parse(R"({"m":{"name":"a","labels":{"x":"1,2"}},"l":[{"n":"c","i":"i"}]})"));
  EXPECT_EQ(OnlyDocument("note: |\n  ,starts with a comma\nother: 'x,\n  ,y'\n"),
            json::parse(R"({"note":",starts with a comma\n","other":"x, ,y"})"));
}

}  // namespace
}  // namespace nodegate::admit
