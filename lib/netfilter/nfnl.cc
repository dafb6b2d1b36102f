#include "lib/netfilter/nfnl.h"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "lib/netfilter/release.h"

namespace nodegate::netfilter {
namespace {
constexpr size_t kMessageHeader = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
}  // namespace

Result<sys::UniqueFd> OpenNfnlSocket() {
  sys::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!fd.valid()) {
    return Error(kErrKernel, std::string("nftables: netlink socket: ") + std::strerror(errno));
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int err = errno;
    HandOffBeforeClose(fd.get());
    return Error(kErrKernel, std::string("nftables: netlink bind: ") + std::strerror(err));
  }
  // Best effort, as in lib/netlink/socket.cc: the kernel's reason for a refusal, short acks,
  // and room for one large dump message.
  const int on = 1;
  (void)::setsockopt(fd.get(), SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on));
  (void)::setsockopt(fd.get(), SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  const int size = 1 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  return fd;
}

size_t NfnlMessageLength(size_t attrs_size) { return kMessageHeader + NLMSG_ALIGN(attrs_size); }

void WriteNfnlMessage(uint8_t* at, uint16_t type, uint16_t flags, uint32_t seq, uint8_t family,
                      uint16_t res_id, ByteView attrs) {
  nlmsghdr nlh{};
  nlh.nlmsg_len = static_cast<uint32_t>(NfnlMessageLength(attrs.size()));
  nlh.nlmsg_type = type;
  nlh.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  nlh.nlmsg_seq = seq;
  nfgenmsg gen{};
  gen.nfgen_family = family;
  gen.version = NFNETLINK_V0;
  gen.res_id = htons(res_id);
  std::memcpy(at, &nlh, sizeof(nlh));
  std::memcpy(at + NLMSG_HDRLEN, &gen, sizeof(gen));
  if (!attrs.empty()) std::memcpy(at + kMessageHeader, attrs.data(), attrs.size());
}

std::vector<uint8_t> NfnlMessage(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family,
                                 uint16_t res_id, ByteView attrs) {
  std::vector<uint8_t> out(NfnlMessageLength(attrs.size()), 0);
  WriteNfnlMessage(out.data(), type, flags, seq, family, res_id, attrs);
  return out;
}

std::string ExtAckMessage(const nlmsghdr* h) {
  if ((h->nlmsg_flags & NLM_F_ACK_TLVS) == 0 || h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) {
    return {};
  }
  const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
  size_t offset = NLMSG_HDRLEN + sizeof(nlmsgerr);
  if ((h->nlmsg_flags & NLM_F_CAPPED) == 0) offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
  offset = NLMSG_ALIGN(offset);
  if (h->nlmsg_len <= offset) return {};
  const auto* base = reinterpret_cast<const uint8_t*>(h);
  auto attrs = ParseAttrs({base + offset, h->nlmsg_len - offset});
  const Attr* msg = attrs ? FindAttr(*attrs, NLMSGERR_ATTR_MSG) : nullptr;
  return msg ? msg->String() : std::string();
}

}  // namespace nodegate::netfilter
