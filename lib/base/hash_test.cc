// The names derived from a network and container (the reference's chain and ifb names) and
// the SHA-512 they are cut from.
#include "lib/base/hash.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace nodegate
