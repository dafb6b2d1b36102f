// The transport's pieces that need no kernel: the GETGEN request and the reading of its answer
// (allocation-free, for the socket release helper), errno of an answer, stale-generation
// errors. The exchanges themselves run against the kernel in the netns tier (tests/portmap,
// tests/bridge).
#include "lib/netfilter/nfnl.h"

// clang-format off
#include <netinet/in.h>
// clang-format on
#include <gtest/gtest.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <cstring>
#include <vector>

namespace nodegate::netfilter {
namespace {

TEST(Nfnl, GenerationRequestIsAGetgen) {
  alignas(nlmsghdr) uint8_t request[kGenerationRequestBytes];
  std::memset(request, 0xaa, sizeof(request));
  WriteGenerationRequest(request, 7);
  const auto* h = reinterpret_cast<const nlmsghdr*>(request);
  EXPECT_EQ(h->nlmsg_len, kGenerationRequestBytes);
  EXPECT_EQ(h->nlmsg_type, NftMessageType(NFT_MSG_GETGEN));
  EXPECT_EQ(h->nlmsg_flags, NLM_F_REQUEST);
  EXPECT_EQ(h->nlmsg_seq, 7u);
  const auto* gen = reinterpret_cast<const nfgenmsg*>(request + NLMSG_HDRLEN);
  EXPECT_EQ(gen->nfgen_family, AF_UNSPEC);
  EXPECT_EQ(gen->version, NFNETLINK_V0);
  EXPECT_EQ(gen->res_id, 0);
}

TEST(Nfnl, GenerationOfANewgenAnswerOnly) {
  AttrWriter attrs;
  attrs.PutBe32(NFTA_GEN_ID, 4242);
  const std::vector<uint8_t> answer =
      NfnlMessage(NftMessageType(NFT_MSG_NEWGEN), 0, 1, AF_UNSPEC, 0, attrs.bytes());
  EXPECT_EQ(GenerationOf(reinterpret_cast<const nlmsghdr*>(answer.data())), 4242u);
  const std::vector<uint8_t> other =
      NfnlMessage(NftMessageType(NFT_MSG_NEWTABLE), 0, 1, AF_UNSPEC, 0, attrs.bytes());
  EXPECT_EQ(GenerationOf(reinterpret_cast<const nlmsghdr*>(other.data())), std::nullopt);
  const std::vector<uint8_t> empty =
      NfnlMessage(NftMessageType(NFT_MSG_NEWGEN), 0, 1, AF_UNSPEC, 0, {});
  EXPECT_EQ(GenerationOf(reinterpret_cast<const nlmsghdr*>(empty.data())), std::nullopt);
}

TEST(Nfnl, ErrnoOfAnAnswer) {
  struct {
    nlmsghdr header;
    nlmsgerr error;
  } answer{};
  answer.header.nlmsg_len = sizeof(answer);
  answer.header.nlmsg_type = NLMSG_ERROR;
  answer.error.error = -ERESTART;
  EXPECT_EQ(NfnlErrno(&answer.header), ERESTART);
  answer.error.error = 0;
  EXPECT_EQ(NfnlErrno(&answer.header), 0);
  answer.header.nlmsg_len = NLMSG_HDRLEN;
  EXPECT_EQ(NfnlErrno(&answer.header), EBADMSG);
}

TEST(Nfnl, StaleGenerationIsRecognised) {
  const Error stale = StaleGeneration("iptables-nft: commit table nat");
  EXPECT_TRUE(IsStaleGeneration(stale));
  EXPECT_EQ(stale.code, kErrKernel);
  EXPECT_EQ(stale.msg, std::string("iptables-nft: commit table nat: ") + kStaleGenerationDetails);
  EXPECT_FALSE(IsStaleGeneration(Error(kErrKernel, "nftables: batch: Device or resource busy")));
}

}  // namespace
}  // namespace nodegate::netfilter
