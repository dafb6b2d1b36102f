#include "lib/base/base64.h"

#include <gtest/gtest.h>

namespace nodegate {
namespace {

TEST(Base64, EncodesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
  EXPECT_EQ(Base64Encode("{\"a\":1}\n"), "eyJhIjoxfQo=");  // a cache file's conflist, as Go writes it
}

TEST(Base64, RoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string part = all.substr(0, n);
    EXPECT_EQ(Base64Decode(Base64Encode(part)), part) << n;
  }
}

TEST(Base64, StrictRefusesWhatWeNeverWrite) {
  EXPECT_EQ(Base64Decode("Zm9vYg=="), "foob");
  EXPECT_FALSE(Base64Decode("Zm9vYg"));        // unpadded
  EXPECT_FALSE(Base64Decode("Zm9v\nYg=="));    // a line break
  EXPECT_FALSE(Base64Decode("Zg==Zm8="));      // data after padding
  EXPECT_FALSE(Base64Decode("Zm9*"));          // not the alphabet
  EXPECT_FALSE(Base64Decode("Z==="));          // one digit is not a byte
  EXPECT_FALSE(Base64Decode("ab=c"));          // padding inside the quantum
}

TEST(Base64, LenientReadsPastedKubeconfigData) {
  EXPECT_EQ(Base64Decode("Zm9v\nYmFy\n", Base64Input::kLenient), "foobar");
  EXPECT_EQ(Base64Decode("Zm9vYg", Base64Input::kLenient), "foob");
  EXPECT_EQ(Base64Decode(" Zm8= ", Base64Input::kLenient), "fo");
  EXPECT_FALSE(Base64Decode("Zm9v!", Base64Input::kLenient));
  EXPECT_FALSE(Base64Decode("Zg==Zm8=", Base64Input::kLenient));
}

}  // namespace
}  // namespace nodegate
