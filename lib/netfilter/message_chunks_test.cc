// MessageChunks: bytes handed out once, zeroed, in order, never moved; oversized messages get a
// chunk of their own; Views() covers exactly what was written.

#include "lib/netfilter/message_chunks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace nodegate::netfilter {
namespace {

size_t Total(const MessageChunks& chunks) {
  size_t total = 0;
  for (const auto view : chunks.Views()) total += view.size();
  return total;
}

TEST(MessageChunksTest, BytesStayInPlaceAndComeBackInOrder) {
  MessageChunks chunks;
  EXPECT_TRUE(chunks.empty());
  std::vector<uint8_t*> starts;
  // Enough 600-byte messages to fill several chunks.
  const size_t count = 3 * MessageChunks::kMaxChunkBytes / 600;
  for (size_t i = 0; i < count; ++i) {
    uint8_t* at = chunks.Append(600);
    ASSERT_NE(at, nullptr);
    EXPECT_EQ(at[0], 0);  // zeroed
    EXPECT_EQ(at[599], 0);
    std::memset(at, static_cast<int>(i % 251), 600);
    starts.push_back(at);
  }
  // Nothing moved: every message still holds what was written to it.
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(starts[i][0], i % 251) << i;
    EXPECT_EQ(starts[i][599], i % 251) << i;
  }
  EXPECT_EQ(chunks.size(), count * 600);
  EXPECT_EQ(Total(chunks), count * 600);
  EXPECT_GE(chunks.Views().size(), 3u);
  // In order: the views, concatenated, are the messages one after the other.
  size_t message = 0, offset = 0;
  for (const auto view : chunks.Views()) {
    for (const uint8_t byte : view) {
      ASSERT_EQ(byte, message % 251);
      if (++offset == 600) {
        offset = 0;
        ++message;
      }
    }
  }
  EXPECT_EQ(message, count);
}

TEST(MessageChunksTest, AMessageLargerThanAChunkGetsItsOwn) {
  MessageChunks chunks;
  chunks.Append(16);
  uint8_t* big = chunks.Append(MessageChunks::kMaxChunkBytes + 4096);
  std::memset(big, 7, MessageChunks::kMaxChunkBytes + 4096);
  chunks.Append(16);
  EXPECT_EQ(chunks.size(), 32 + MessageChunks::kMaxChunkBytes + 4096);
  EXPECT_EQ(Total(chunks), chunks.size());
}

TEST(MessageChunksTest, MovedFromIsEmptyAndClearFreesEverything) {
  MessageChunks a;
  a.Append(100);
  MessageChunks b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_EQ(b.size(), 100u);
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace nodegate::netfilter
