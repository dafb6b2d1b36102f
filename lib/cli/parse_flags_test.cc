#include "lib/cli/parse_flags.h"

#include <gtest/gtest.h>

#include <sstream>

namespace nodegate::cli {
namespace {

// Runs ParseFlags on `args` with stdout and stderr captured.
struct Parsed {
  std::optional<int> code;
  std::string out, err;
};
Parsed Parse(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  Parsed p;
  p.code = ParseFlags(app, static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(ParseFlags, GoesOnWithValidFlags) {
  CLI::App app{"test", "nodegate test"};
  int port = 0;
  app.add_option("--port", port);
  const Parsed p = Parse(app, {"--port", "53"});
  EXPECT_EQ(p.code, std::nullopt);
  EXPECT_EQ(port, 53);
}

TEST(ParseFlags, HelpIsZeroOnStdout) {
  CLI::App app{"does a thing", "nodegate test"};
  const Parsed p = Parse(app, {"--help"});
  EXPECT_EQ(p.code, 0);
  EXPECT_NE(p.out.find("does a thing"), std::string::npos) << p.out;
  EXPECT_TRUE(p.err.empty());
}

TEST(ParseFlags, MisuseIsTwoOnStderrWithAHint) {
  CLI::App app{"test", "nodegate test"};
  const Parsed p = Parse(app, {"--no-such-flag"});
  EXPECT_EQ(p.code, kExitUsage);
  EXPECT_TRUE(p.out.empty());
  EXPECT_NE(p.err.find("nodegate test: "), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("run 'nodegate test --help' for usage"), std::string::npos) << p.err;
}

TEST(ParseFlags, DescribeOnlyHandsOverTheAppAndParsesNothing) {
  CLI::App app{"test", "nodegate test"};
  int port = 7;
  app.add_option("--port", port);
  std::vector<std::string> seen;
  SetDescribeOnly([&seen](const CLI::App& a) { seen.push_back(a.get_name()); });
  const Parsed p = Parse(app, {"--port", "53"});
  SetDescribeOnly(nullptr);
  EXPECT_EQ(p.code, kExitOk);
  EXPECT_EQ(port, 7);
  EXPECT_EQ(seen, std::vector<std::string>{"nodegate test"});
  EXPECT_EQ(Parse(app, {"--port", "53"}).code, std::nullopt);
  EXPECT_EQ(port, 53);
}

}  // namespace
}  // namespace nodegate::cli
