// The pure helpers of query.h: the key bytes of an ifname concatenation, and the comment read
// from nft's user data records, and the records nft_batch.h writes. The queries and the
// batch themselves need nf_tables (tests/portmap/).
#include "lib/netfilter/query.h"

#include <gtest/gtest.h>
#include <net/if.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/netfilter/nft_batch.h"

namespace nodegate::netfilter {
namespace {

TEST(IfnameKey, EachFieldIsZeroPaddedToIfnamsiz) {
  const std::vector<uint8_t> key = IfnameKey({"3553464f01e30f3", "all4"});
  ASSERT_EQ(key.size(), 2u * IFNAMSIZ);
  EXPECT_EQ(std::string(key.begin(), key.begin() + 15), "3553464f01e30f3");
  EXPECT_EQ(key[15], 0);  // the field's NUL
  EXPECT_EQ(std::string(key.begin() + IFNAMSIZ, key.begin() + IFNAMSIZ + 4), "all4");
  for (size_t i = IFNAMSIZ + 4; i < key.size(); ++i) {
    EXPECT_EQ(key[i], 0) << i;
  }
}

TEST(IfnameKey, LongFieldsKeepTheirNulAndNoFieldsIsEmpty) {
  // Longer than IFNAMSIZ - 1: cut, so the next field still starts at its offset.
  const std::vector<uint8_t> key = IfnameKey({std::string(40, 'x'), "y"});
  ASSERT_EQ(key.size(), 2u * IFNAMSIZ);
  EXPECT_EQ(std::string(key.begin(), key.begin() + IFNAMSIZ - 1), std::string(IFNAMSIZ - 1, 'x'));
  EXPECT_EQ(key[IFNAMSIZ - 1], 0);
  EXPECT_EQ(key[IFNAMSIZ], 'y');
  EXPECT_EQ(IfnameKey({""}), std::vector<uint8_t>(IFNAMSIZ, 0));
  EXPECT_TRUE(IfnameKey({}).empty());
}

TEST(UserDataComment, CommentOfNftUserData) {
  // Records of (type, length, value); the comment is type 0, NUL-terminated.
  const std::vector<uint8_t> udata = {1, 2, 'x', 'y', 0, 6, 'c', 't', 'r', '-', '1', 0};
  EXPECT_EQ(UserDataComment(udata), "ctr-1");
  EXPECT_EQ(UserDataComment(std::vector<uint8_t>{1, 1, 'x'}), "");
  EXPECT_EQ(UserDataComment(std::vector<uint8_t>{0, 9, 'c'}), "");  // cut short
  EXPECT_EQ(UserDataComment({}), "");
}

TEST(UserDataComment, FirstCommentRecordAndItsLength) {
  // The value ends at its record even without a NUL; the first comment record wins.
  const std::vector<uint8_t> no_nul = {0, 3, 'a', 'b', 'c', 0, 2, 'd', 0};
  EXPECT_EQ(UserDataComment(no_nul), "abc");
  // Text after a NUL inside the record is not part of the comment.
  const std::vector<uint8_t> inner_nul = {0, 4, 'a', 0, 'b', 'c'};
  EXPECT_EQ(UserDataComment(inner_nul), "a");
  // An empty record of another type before it, and a lone trailing byte.
  const std::vector<uint8_t> after_empty = {2, 0, 0, 2, 'o', 'k'};
  EXPECT_EQ(UserDataComment(after_empty), "ok");
  EXPECT_EQ(UserDataComment(std::vector<uint8_t>{0}), "");
}

// What the element batch writes reads back as the comment nft would show; past the record's
// one-byte length the text is cut, not wrapped.
TEST(CommentUserData, ReadsBackAsTheComment) {
  EXPECT_EQ(CommentUserData("ctr1"), (std::vector<uint8_t>{0, 5, 'c', 't', 'r', '1', 0}));
  EXPECT_EQ(UserDataComment(CommentUserData("ctr1")), "ctr1");
  const std::string id(128, 'c');
  EXPECT_EQ(UserDataComment(CommentUserData(id)), id);
  EXPECT_EQ(UserDataComment(CommentUserData(std::string(300, 'x'))), std::string(254, 'x'));
}

}  // namespace
}  // namespace nodegate::netfilter
