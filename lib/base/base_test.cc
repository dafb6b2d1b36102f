// Unit tests of lib/base, lib/net and lib/sys pieces that need no privileges.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "lib/base/hash.h"
#include "lib/base/result.h"
#include "lib/base/scope_guard.h"
#include "lib/net/ip.h"
#include "lib/sys/atomic_file.h"
#include "lib/sys/file_lock.h"

namespace nodegate {
namespace {

TEST(HashedName, MatchesReferenceChainAndIfbNames) {
  // Values observed from Debian's reference plugins (v1.1.1): portmap's chain names and
  // bandwidth's ifb name.
  EXPECT_EQ(HashedName("CNI-DN-", "rnet", "ctr1", 28), "CNI-DN-6ef8579d92ac413d65a3e");
  EXPECT_EQ(HashedName("bwp", "rnet", "ctr1", 15), "bwp6ef8579d92ac");
}

// Known answers (FIPS 180-4), including the padding edge cases at 111/112 bytes and more
// than one 128-byte block.
TEST(Sha512Hex, KnownAnswers) {
  EXPECT_EQ(Sha512Hex(""),
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
            "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
  EXPECT_EQ(Sha512Hex("abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(Sha512Hex(std::string(111, 'y')),
            "0462e03e558b3e8322d1f91455f36402ec31358ce5a0b8a90aca93fb6ba55b5f"
            "87a246f200cb3b6bb8d43c87ab51c1dbf31c7e5da41364f8ca999a862f1ba9fb");
  EXPECT_EQ(Sha512Hex(std::string(112, 'z')),
            "fa3bf4fa804efc34ce7dccdd124ac1765a6cc1e5f13de086e4467a0650690d9e"
            "dc2d6b7e62018256dd3cef305a8ff13e0d0694fb4df6373446f9fda3a7b1e123");
  EXPECT_EQ(Sha512Hex(std::string(300, 'x')),
            "0dc240ae43b18eeacef4d7d8d64b945ade43c989b724d7c7062a8029f3343caa"
            "322b9fbf42d9ff0cda98f3d7ac5a560ca219b2e73cc041f37052dfa4e84ae624");
}

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

TEST(IpAddress, ParseFormatAndArithmetic) {
  auto v4 = net::IpAddress::Parse("10.0.0.255");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->Next().ToString(), "10.0.1.0");
  EXPECT_EQ(v4->Prev().ToString(), "10.0.0.254");
  auto v6 = net::IpAddress::Parse("2001:0db8:0000:0000:0000:0000:0000:00ff");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->ToString(), "2001:db8::ff");  // RFC 5952
  EXPECT_EQ(v6->Next().ToString(), "2001:db8::100");
  EXPECT_FALSE(net::IpAddress::Parse("10.0.0.256"));
  // An embedded NUL (a JSON "\u0000") must not cut the text short.
  EXPECT_FALSE(net::IpAddress::Parse(std::string_view("1.2.3.4\0garbage", 15)));
  EXPECT_FALSE(net::IpPrefix::Parse(std::string_view("10.0.0.0/8\0x", 12)));
  EXPECT_FALSE(net::IpAddress::Parse(""));
  EXPECT_FALSE(net::IpAddress::Parse("1.2.3"));
  EXPECT_LT(*net::IpAddress::Parse("10.0.0.9"), *net::IpAddress::Parse("10.0.0.10"));
}

TEST(IpPrefix, KeepsHostBitsAndMasks) {
  auto p = net::IpPrefix::Parse("10.88.0.2/16");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ToString(), "10.88.0.2/16");
  EXPECT_EQ(p->Network().ToString(), "10.88.0.0");
  EXPECT_EQ(p->LastAddress().ToString(), "10.88.255.255");
  EXPECT_TRUE(p->Contains(*net::IpAddress::Parse("10.88.7.7")));
  EXPECT_FALSE(p->Contains(*net::IpAddress::Parse("10.89.0.1")));
  EXPECT_FALSE(p->Contains(*net::IpAddress::Parse("::1")));
  auto v6 = net::IpPrefix::Parse("2001:db8::1/125");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->LastAddress().ToString(), "2001:db8::7");
  EXPECT_TRUE(net::IpPrefix::Parse("10.0.0.0/8")->Overlaps(*net::IpPrefix::Parse("10.1.0.0/16")));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.0/33"));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.0/"));
  EXPECT_FALSE(net::IpPrefix::Parse("10.0.0.1"));
  EXPECT_EQ(net::IpPrefix::Parse("10.0.0.1", true)->length(), 32);
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-base-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TempDir, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(sys::WriteFileAtomic(path, "one").ok());
  ASSERT_TRUE(sys::WriteFileAtomic(path, "two").ok());
  auto content = sys::ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "two");
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir_)) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  auto missing = sys::ReadFile(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kErrIo);
}

TEST_F(TempDir, FileLockIsReentrantAcrossObjectsAfterRelease) {
  const std::string path = dir_ + "/lock";
  {
    auto lock = sys::FileLock::Acquire(path);
    ASSERT_TRUE(lock.ok());
  }
  auto again = sys::FileLock::Acquire(path);
  EXPECT_TRUE(again.ok());
  EXPECT_TRUE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace nodegate
