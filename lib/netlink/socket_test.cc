// The parts of socket.h that need no socket: the header NewMessage builds, a message built on
// it read back with libnl's parser, and LibnlError's code and text.
#include "lib/netlink/socket.h"

#include <gtest/gtest.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>

#include <string>

namespace nodegate::netlink {
namespace {

TEST(NewMessage, RequestHeaderWithTheCallersFlags) {
  MsgPtr msg = NewMessage(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);
  ASSERT_NE(msg, nullptr);
  const nlmsghdr* hdr = nlmsg_hdr(msg.get());
  EXPECT_EQ(hdr->nlmsg_type, RTM_NEWQDISC);
  // Only the caller's flags: libnl adds NLM_F_REQUEST and NLM_F_ACK when the socket sends it
  // (nl_complete_msg), so a built message can be compared before it is sent.
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(hdr->nlmsg_len, static_cast<uint32_t>(NLMSG_HDRLEN));  // no payload yet
  // The sequence number is the socket's to give, too.
  EXPECT_EQ(hdr->nlmsg_seq, 0u);
  EXPECT_EQ(nlmsg_hdr(NewMessage(RTM_GETLINK, NLM_F_DUMP).get())->nlmsg_flags, NLM_F_DUMP);
}

TEST(NewMessage, PayloadAndAttributesReadBack) {
  MsgPtr msg = NewMessage(RTM_NEWQDISC, NLM_F_CREATE);
  ASSERT_NE(msg, nullptr);
  tcmsg tcm{};
  tcm.tcm_family = AF_UNSPEC;
  tcm.tcm_ifindex = 7;
  tcm.tcm_handle = 0x00010000;
  tcm.tcm_parent = 0xffffffff;
  ASSERT_EQ(nlmsg_append(msg.get(), &tcm, sizeof(tcm), NLMSG_ALIGNTO), 0);
  ASSERT_EQ(nla_put_string(msg.get(), TCA_KIND, "tbf"), 0);
  nlattr* options = nla_nest_start(msg.get(), TCA_OPTIONS);
  ASSERT_NE(options, nullptr);
  ASSERT_EQ(nla_put_u32(msg.get(), 1, 1234), 0);
  nla_nest_end(msg.get(), options);

  nlmsghdr* hdr = nlmsg_hdr(msg.get());
  const auto* read = static_cast<const tcmsg*>(nlmsg_data(hdr));
  EXPECT_EQ(read->tcm_ifindex, 7);
  EXPECT_EQ(read->tcm_handle, 0x00010000u);
  EXPECT_EQ(read->tcm_parent, 0xffffffffu);
  nlattr* tb[TCA_MAX + 1] = {};
  ASSERT_EQ(nlmsg_parse(hdr, sizeof(tcmsg), tb, TCA_MAX, nullptr), 0);
  ASSERT_NE(tb[TCA_KIND], nullptr);
  EXPECT_EQ(std::string(nla_get_string(tb[TCA_KIND])), "tbf");
  ASSERT_NE(tb[TCA_OPTIONS], nullptr);
  nlattr* inner[2] = {};
  ASSERT_EQ(nla_parse_nested(inner, 1, tb[TCA_OPTIONS], nullptr), 0);
  ASSERT_NE(inner[1], nullptr);
  EXPECT_EQ(nla_get_u32(inner[1]), 1234u);
  EXPECT_EQ(tb[TCA_STATS], nullptr);
}

TEST(LibnlError, KernelCodeAndTheOperationFirst) {
  const Error e = LibnlError(-NLE_NOMEM, "add tbf qdisc");
  EXPECT_EQ(e.code, kErrKernel);
  EXPECT_EQ(e.msg, "add tbf qdisc: " + std::string(nl_geterror(NLE_NOMEM)));
  // Each libnl code keeps its own text, so two failures read differently.
  EXPECT_NE(LibnlError(-NLE_OBJ_NOTFOUND, "x").msg, LibnlError(-NLE_PERM, "x").msg);
  EXPECT_GT(LibnlError(-NLE_PERM, "x").msg.size(), std::string("x: ").size());
}

}  // namespace
}  // namespace nodegate::netlink
