// HexEncode: two lowercase digits per byte, high nibble first.
#include "lib/base/hex.h"

#include <gtest/gtest.h>

#include <vector>

namespace nodegate {
namespace {

TEST(HexEncode, TwoLowercaseDigitsPerByte) {
  EXPECT_EQ(HexEncode(std::vector<uint8_t>{}), "");
  EXPECT_EQ(HexEncode(std::vector<uint8_t>{0x00, 0x0f, 0xa0, 0xff, 0x5c}), "000fa0ff5c");
}

}  // namespace
}  // namespace nodegate
