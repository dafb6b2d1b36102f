#include "cmd/nodegate/help/docs.h"

#include <gtest/gtest.h>

namespace nodegate::help {
namespace {

CommandDoc Sample() {
  static std::string output = "text", file;
  static bool dry_run = false;
  CLI::App app{"Does things.", "nodegate thing"};
  app.add_option("-o,--output", output, "text or json")->check(CLI::IsMember({"text", "json"}));
  CLI::App* sub = app.add_subcommand("run", "runs it");
  sub->add_option("--file", file, "a-file")->required();
  sub->add_flag("--dry-run", dry_run, "change nothing");
  sub->add_option("PATH", file, "where");
  return Describe(app, "");
}

TEST(Docs, DescribeReadsFlagsChoicesAndSubcommands) {
  const CommandDoc c = Sample();
  EXPECT_EQ(c.path, "nodegate thing");
  ASSERT_EQ(c.flags.size(), 2u);  // --help, -o
  EXPECT_EQ(c.flags[0].names, (std::vector<std::string>{"-h", "--help"}));
  EXPECT_EQ(c.flags[1].names, (std::vector<std::string>{"-o", "--output"}));
  EXPECT_EQ(c.flags[1].choices, (std::vector<std::string>{"text", "json"}));
  ASSERT_EQ(c.subcommands.size(), 1u);
  const CommandDoc& run = c.subcommands[0];
  EXPECT_EQ(run.path, "nodegate thing run");
  ASSERT_EQ(run.flags.size(), 4u);
  EXPECT_TRUE(run.flags[1].required);
  EXPECT_EQ(run.flags[1].value, "TEXT");
  EXPECT_EQ(run.flags[2].value, "");  // a switch
  EXPECT_TRUE(run.flags[3].positional);
  EXPECT_EQ(run.flags[3].names, std::vector<std::string>{"PATH"});
}

TEST(Docs, ManPageHasEveryFlagEscaped) {
  const std::string page = FillManPage(".TH X 1\n.\\\" @OPTIONS@\n.SH EXIT STATUS\n", {Sample()});
  EXPECT_NE(page.find(".SH OPTIONS\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".SS nodegate thing run\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fITEXT\\fR"), std::string::npos)
      << page;
  EXPECT_NE(page.find("\\fB\\-\\-file\\fR \\fITEXT\\fR\na\\-file (required)"), std::string::npos)
      << page;
  EXPECT_NE(page.find("(one of text, json)"), std::string::npos) << page;
  EXPECT_EQ(page.find("@OPTIONS@"), std::string::npos) << page;
  EXPECT_LT(page.find(".SH OPTIONS"), page.find(".SH EXIT STATUS"));
}

TEST(Docs, CompletionsNameEveryPathFlagAndChoice) {
  CommandDoc root;
  root.path = "nodegate";
  root.subcommands.push_back(Sample());
  for (const std::string& script : {BashCompletion(root), ZshCompletion(root)}) {
    EXPECT_NE(script.find("'nodegate thing run'"), std::string::npos) << script;
    EXPECT_NE(script.find("--dry-run"), std::string::npos) << script;
    EXPECT_NE(script.find("'nodegate thing|--output'"), std::string::npos) << script;
    EXPECT_NE(script.find("text json"), std::string::npos) << script;
  }
}

}  // namespace
}  // namespace nodegate::help
