// NftMessageErrno: libnftables' error text read back as the errno it stands for.
#include "lib/netfilter/nft.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace nodegate::netfilter {
namespace {

TEST(NftErrors, MessagesMapToErrno) {
  EXPECT_EQ(NftMessageErrno("Error: Could not process rule: File exists"), EEXIST);
  EXPECT_EQ(NftMessageErrno("Error: No such file or directory"), ENOENT);
  EXPECT_EQ(NftMessageErrno("Error: syntax error"), 0);
}

}  // namespace
}  // namespace nodegate::netfilter
