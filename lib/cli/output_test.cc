#include "lib/cli/output.h"

#include <gtest/gtest.h>

namespace nodegate::cli {
namespace {

Format Parse(std::vector<std::string> args, const std::string& text_name = "text") {
  CLI::App app{"test", "test"};
  Format format = Format::kText;
  AddOutputFlag(app, format, text_name);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return format;
}

TEST(Output, FlagTakesTextJsonYamlAndTheCommandsOwnWord) {
  EXPECT_EQ(Parse({}), Format::kText);
  EXPECT_EQ(Parse({"-o", "json"}), Format::kJson);
  EXPECT_EQ(Parse({"--output", "yaml"}), Format::kYaml);
  EXPECT_EQ(Parse({"-o", "text"}, "table"), Format::kText);
  EXPECT_EQ(Parse({"-o", "table"}, "table"), Format::kText);
  EXPECT_THROW(Parse({"-o", "xml"}), CLI::ValidationError);
  EXPECT_THROW(Parse({"-o", "table"}), CLI::ValidationError);
}

TEST(Output, RenderJsonIsIndentedAndEndsInANewline) {
  const nlohmann::ordered_json j = {{"b", 1}, {"a", {true, nullptr}}};
  EXPECT_EQ(Render(j, Format::kJson), "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}\n");
}

TEST(Output, YamlKeepsOrderQuotesWhatAReaderWouldMisread) {
  const nlohmann::ordered_json j = {{"name", "a: b"},
                                    {"yes", "no"},
                                    {"list", {1, "x"}},
                                    {"empty", nlohmann::json::object()},
                                    {"nested", {{"k", nullptr}}}};
  EXPECT_EQ(Render(j, Format::kYaml),
            "name: \"a: b\"\n"
            "\"yes\": \"no\"\n"
            "list:\n"
            "  - 1\n"
            "  - \"x\"\n"
            "empty: {}\n"
            "nested:\n"
            "  k: null\n");
  EXPECT_EQ(ToYaml(nlohmann::json::array()), "[]\n");
}

}  // namespace
}  // namespace nodegate::cli
