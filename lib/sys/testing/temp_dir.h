#pragma once
// A test fixture with a fresh folder under /tmp, removed after the test: for unit tests of file
// helpers (lib/sys).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace nodegate::sys::testing {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-sys-test-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    ASSERT_NE(made, nullptr) << "mkdtemp";
    dir_ = made;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

}  // namespace nodegate::sys::testing
