#include "lib/cli/parse_flags.h"

#include <iostream>

namespace nodegate::cli {
namespace {

AppVisitor& DescribeVisitor() {
  static AppVisitor visitor;
  return visitor;
}

}  // namespace

void SetDescribeOnly(AppVisitor visit) { DescribeVisitor() = std::move(visit); }

std::optional<int> ParseFlags(CLI::App& app, int argc, char** argv) {
  if (DescribeVisitor()) {
    DescribeVisitor()(app);
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << e.what() << "\n"
              << "run '" << app.get_name() << " --help' for usage\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace nodegate::cli
