// ScopeGuard: the rollback helper runs once at scope exit unless dismissed.
#include "lib/base/scope_guard.h"

#include <gtest/gtest.h>

namespace nodegate {
namespace {

TEST(ScopeGuard, RunsUnlessDismissed) {
  int runs = 0;
  {
    ScopeGuard g([&] { ++runs; });
  }
  {
    ScopeGuard g([&] { ++runs; });
    g.Dismiss();
  }
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace nodegate
