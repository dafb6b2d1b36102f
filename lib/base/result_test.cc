// Result<T> and NG_ASSIGN_OR_RETURN: the first error returns unchanged, with context added.
#include "lib/base/result.h"

#include <gtest/gtest.h>

namespace nodegate {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) {
    return Error(kErrInvalidConfig, "odd");
  }
  return x / 2;
}

Result<int> Quarter(int x) {
  NG_ASSIGN_OR_RETURN(int h, Half(x));
  NG_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Result, PropagatesFirstError) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(*Quarter(8), 2);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, kErrInvalidConfig);
  EXPECT_EQ(bad.error().WithContext("ctx").msg, "ctx: odd");
}

}  // namespace
}  // namespace nodegate
