// Runs every fuzz target over its seed corpus (corpus/<name>/) and its crash regressions
// (crashes/<name>/) in the unit tier, so what the fuzzers once found stays fixed and every
// target's code is compiled and run by `make test`, with or without clang.

#include "tests/fuzz/replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace nodegate::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzzDir = NODEGATE_FUZZ_DIR;

// The inputs under `dir` (hidden files such as .gitkeep left out), sorted; none if absent.
std::vector<fs::path> InputsIn(const fs::path& dir) {
  std::vector<fs::path> inputs;
  if (!fs::is_directory(dir)) {
    return inputs;
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && !entry.path().filename().string().starts_with(".")) {
      inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Replay(const ReplayTarget& target, const std::vector<fs::path>& inputs) {
  for (const auto& input : inputs) {
    // A broken invariant aborts the process: this line names the input that did it.
    std::fprintf(stderr, "replay %s\n", input.c_str());
    target.run(ReadBytes(input));
  }
}

class FuzzReplayTest : public ::testing::TestWithParam<ReplayTarget> {};

TEST_P(FuzzReplayTest, SeedCorpus) {
  const std::vector<fs::path> seeds = InputsIn(kFuzzDir / "corpus" / GetParam().name);
  // A target with nothing to replay would pass while testing nothing.
  ASSERT_FALSE(seeds.empty()) << "no seed inputs in corpus/" << GetParam().name;
  Replay(GetParam(), seeds);
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplayTest, ::testing::ValuesIn(AllTargets()),
                         [](const auto& info) { return std::string(info.param.name); });

// The targets that once found something: those with a crashes/<name>/ folder (README.md here,
// "What the fuzzers found"). A case for each, none for a target that has found nothing, so no
// case passes without replaying an input.
std::vector<ReplayTarget> TargetsThatFoundSomething() {
  std::vector<ReplayTarget> found;
  for (const ReplayTarget& target : AllTargets()) {
    if (fs::is_directory(kFuzzDir / "crashes" / target.name)) found.push_back(target);
  }
  return found;
}

class FuzzCrashTest : public ::testing::TestWithParam<ReplayTarget> {};

TEST_P(FuzzCrashTest, CrashRegressions) {
  const std::vector<fs::path> inputs = InputsIn(kFuzzDir / "crashes" / GetParam().name);
  ASSERT_FALSE(inputs.empty()) << "crashes/" << GetParam().name << " holds no input";
  Replay(GetParam(), inputs);
}

INSTANTIATE_TEST_SUITE_P(Found, FuzzCrashTest, ::testing::ValuesIn(TargetsThatFoundSomething()),
                         [](const auto& info) { return std::string(info.param.name); });

// A folder under corpus/ or crashes/ that names no target (a typo, a removed target) would be
// silently skipped.
TEST(FuzzReplay, EveryInputFolderHasATarget) {
  for (const char* kind : {"corpus", "crashes"}) {
    if (!fs::is_directory(kFuzzDir / kind)) {
      continue;
    }
    for (const auto& entry : fs::directory_iterator(kFuzzDir / kind)) {
      const std::string name = entry.path().filename().string();
      const bool known = std::any_of(AllTargets().begin(), AllTargets().end(),
                                     [&](const ReplayTarget& t) { return t.name == name; });
      EXPECT_TRUE(known) << kind << "/" << name << " names no fuzz target";
    }
  }
}

}  // namespace
}  // namespace nodegate::fuzz
