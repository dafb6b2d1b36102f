#include "lib/sys/dynamic_library.h"

#include <gtest/gtest.h>

namespace nodegate::sys {
namespace {

TEST(OpenLibrary, NamesTheLibraryAndWhyWhenItCannotLoad) {
  auto lib = OpenLibrary("libnodegate-does-not-exist.so.9", "a test");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().code, kErrKernel);
  EXPECT_NE(lib.error().msg.find("cannot load libnodegate-does-not-exist.so.9 (a test): "),
            std::string::npos)
      << lib.error().msg;
}

TEST(SymbolBinder, BindsPresentSymbolsAndListsEveryMissingOne) {
  auto libc = OpenLibrary("libc.so.6");
  ASSERT_TRUE(libc.ok()) << libc.error().msg;
  using StrlenFn = size_t(const char*);
  StrlenFn* strlen_fn = nullptr;
  StrlenFn* absent_a = nullptr;
  StrlenFn* absent_b = nullptr;
  SymbolBinder bind(*libc, "");
  bind(strlen_fn, "strlen");
  bind(absent_a, "ng_absent_a");
  bind(absent_b, "ng_absent_b");
  ASSERT_NE(strlen_fn, nullptr);
  EXPECT_EQ(strlen_fn("four"), 4u);
  EXPECT_EQ(absent_a, nullptr);
  const Status done = bind.Done("libc");
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().msg, "libc lacks ng_absent_a, ng_absent_b");
}

TEST(SymbolBinder, PutsThePrefixBeforeEachName) {
  auto libc = OpenLibrary("libc.so.6");
  ASSERT_TRUE(libc.ok());
  using StrlenFn = size_t(const char*);
  StrlenFn* fn = nullptr;
  SymbolBinder bind(*libc, "str");
  bind(fn, "len");
  EXPECT_TRUE(bind.Done("libc").ok());
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn("ab"), 2u);
}

}  // namespace
}  // namespace nodegate::sys
