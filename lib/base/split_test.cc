// Fields and SplitLikeGetline against the stream operators they replace: the same inputs read
// both ways give the same pieces.
#include "lib/base/split.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace nodegate {
namespace {

std::vector<std::string> AsStrings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

std::vector<std::string> StreamWords(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::vector<std::string> GetlinePieces(const std::string& text, char sep) {
  std::istringstream in(text);
  std::vector<std::string> pieces;
  for (std::string piece; std::getline(in, piece, sep);) pieces.push_back(piece);
  return pieces;
}

const char* const kSamples[] = {
    "",     " ",        "a",          "a b",   "  a  b  ", "a\tb\nc\vd\fe\rf",
    "a:",   ":",        "::",         "a::b:", ":a",       "nameserver 10.0.0.1\n",
    "\n\n", "x\n\ny\n", "a b\n# c d", "1",     "1\n",      "bwp-cni net ctr eth0",
};

TEST(Fields, ReadsAsStreamExtractionDoes) {
  for (const char* sample : kSamples) {
    EXPECT_EQ(AsStrings(Fields(sample)), StreamWords(sample)) << '"' << sample << '"';
  }
  EXPECT_EQ(AsStrings(Fields("  a b\tc\n")), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Fields, SplitsOnlyOnTheSeparatorsGiven) {
  EXPECT_EQ(AsStrings(Fields("a\vb  c\t\rd", " \t\r")),
            (std::vector<std::string>{"a\vb", "c", "d"}));
  EXPECT_EQ(AsStrings(Fields("::a:b", ":")), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(Fields("", " ").empty());
}

TEST(SplitLikeGetline, ReadsAsGetlineDoes) {
  for (const char* sample : kSamples) {
    for (const char sep : {':', '\n', ' '}) {
      EXPECT_EQ(AsStrings(SplitLikeGetline(sample, sep)), GetlinePieces(sample, sep))
          << '"' << sample << "\" split on '" << sep << "'";
    }
  }
  EXPECT_EQ(AsStrings(SplitLikeGetline("a::b:", ':')), (std::vector<std::string>{"a", "", "b"}));
}

}  // namespace
}  // namespace nodegate
