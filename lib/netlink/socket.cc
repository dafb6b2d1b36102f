#include "lib/netlink/socket.h"

#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace nodegate::netlink {
namespace {

// What the receive callbacks learn about one transaction. The replies are kept (each at a
// 4-byte aligned offset of one buffer) and reach the caller only once the kernel said done
// without interrupting the dump, so a dump asked again never shows a reply twice.
struct Exchange {
  bool keep_replies = false;
  std::vector<uint8_t> replies;
  std::vector<size_t> reply_offsets;
  bool done = false;
  int error = 0;  // positive errno from an NLMSG_ERROR
  std::string ext_ack;
};

int OnValid(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  if (ex->keep_replies) {
    const nlmsghdr* hdr = nlmsg_hdr(msg);
    const size_t at = ex->replies.size();
    ex->reply_offsets.push_back(at);
    ex->replies.resize(at + NLMSG_ALIGN(hdr->nlmsg_len));
    std::memcpy(ex->replies.data() + at, hdr, hdr->nlmsg_len);
  }
  return NL_OK;
}

// A dump the kernel interrupted (NLM_F_DUMP_INTR: the objects changed while it was dumped, say
// an IPv6 address the kernel adds as a link comes up) is asked again, this many times in all.
constexpr int kDumpAttempts = 10;

int OnDone(nl_msg* /*msg*/, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

// The extended ack (NLMSGERR_ATTR_MSG) follows the error header and, unless capped, the
// echoed request.
std::string ExtAckMessage(const nlmsgerr* err) {
  const auto* outer =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(err) - NLMSG_HDRLEN);
  if ((outer->nlmsg_flags & NLM_F_ACK_TLVS) == 0) {
    return {};
  }
  size_t offset = NLMSG_HDRLEN + sizeof(nlmsgerr);
  if ((outer->nlmsg_flags & NLM_F_CAPPED) == 0) {
    offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
  }
  if (outer->nlmsg_len <= offset) {
    return {};
  }
  auto* head = reinterpret_cast<nlattr*>(const_cast<char*>(reinterpret_cast<const char*>(outer)) +
                                         NLMSG_ALIGN(offset));
  const int len = static_cast<int>(outer->nlmsg_len - NLMSG_ALIGN(offset));
  nlattr* tb[NLMSGERR_ATTR_MAX + 1] = {};
  if (nla_parse(tb, NLMSGERR_ATTR_MAX, head, len, nullptr) < 0 || !tb[NLMSGERR_ATTR_MSG]) {
    return {};
  }
  return nla_get_string(tb[NLMSGERR_ATTR_MSG]);
}

int OnError(sockaddr_nl* /*who*/, nlmsgerr* err, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  ex->error = -err->error;
  ex->ext_ack = ExtAckMessage(err);
  ex->done = true;
  return NL_STOP;
}

// Sends `msg` (with a fresh sequence number) and reads every reply up to the kernel's done or
// error; `interrupted` tells whether the kernel flagged the dump as interrupted.
Status SendAndReceive(nl_sock* sock, nl_msg* msg, const std::string& what, Exchange& ex,
                      bool& interrupted) {
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
  if (!cb) {
    return Error(kErrKernel, what + ": cannot allocate netlink callbacks");
  }
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, OnValid, &ex);
  nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, OnDone, &ex);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, OnDone, &ex);
  nl_cb_err(cb.get(), NL_CB_CUSTOM, OnError, &ex);

  nlmsg_hdr(msg)->nlmsg_seq = NL_AUTO_SEQ;  // libnl numbers it; a repeat gets the next number
  if (int r = nl_send_auto(sock, msg); r < 0) {
    return LibnlError(r, what);
  }
  while (!ex.done) {
    const int r = nl_recvmsgs(sock, cb.get());
    if (r == -NLE_DUMP_INTR) {
      // Read on to the end of this dump, so the socket holds nothing of it when asked again.
      interrupted = true;
      continue;
    }
    if (r < 0 && ex.error == 0) {
      return LibnlError(r, what);
    }
  }
  return OkStatus();
}

constexpr size_t kReceiveBufferBytes = 64 * 1024;

}  // namespace

MsgPtr NewMessage(int type, int flags) { return MsgPtr(nlmsg_alloc_simple(type, flags)); }

Error LibnlError(int nl_error, const std::string& what) {
  return Error(kErrKernel, what + ": " + nl_geterror(nl_error));
}

Result<Socket> Socket::Open(int protocol) {
  nl_sock* raw = nl_socket_alloc();
  if (raw == nullptr) {
    return Error(kErrKernel, "netlink: cannot allocate a socket");
  }
  Socket sock(raw);
  if (int r = nl_connect(raw, protocol); r < 0) {
    return LibnlError(r, "netlink: connect");
  }
  // Extended acks carry the kernel's own explanation of a refused request; capped acks keep
  // error replies small. Both are best effort (older kernels ignore them).
  const int on = 1;
  const int fd = nl_socket_get_fd(raw);
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on));
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on));
  // A dump of a node with thousands of qdiscs must not overflow the receive buffer.
  (void)nl_socket_set_buffer_size(raw, 1 << 20, 1 << 20);
  // One recvmsg per reply instead of two: libnl peeks at each datagram for its size unless
  // its buffer is known to be large enough. The kernel makes no datagram larger than 32 KiB
  // (a dump's skbs are capped there; other replies are one message).
  (void)nl_socket_set_msg_buf_size(raw, kReceiveBufferBytes);
  nl_socket_disable_msg_peek(raw);
  return sock;
}

Status Socket::Transact(nl_msg* msg, const std::string& what,
                        const std::function<void(const nlmsghdr*)>* on_message,
                        std::initializer_list<int> ok_errnos, int* answered) {
  for (int attempt = 1;; ++attempt) {
    Exchange ex;
    ex.keep_replies = on_message != nullptr && *on_message;
    bool interrupted = false;
    NG_RETURN_IF_ERROR(SendAndReceive(sock_.get(), msg, what, ex, interrupted));
    if (interrupted && ex.error == 0) {
      if (attempt < kDumpAttempts) {
        ++dumps_repeated_;
        continue;
      }
      return Error(kErrTryAgainLater, what + ": dump interrupted " + std::to_string(kDumpAttempts) +
                                          " times, try again");
    }
    for (size_t at : ex.reply_offsets) {
      (*on_message)(reinterpret_cast<const nlmsghdr*>(ex.replies.data() + at));
    }
    if (ex.error != 0) {
      if (std::find(ok_errnos.begin(), ok_errnos.end(), ex.error) != ok_errnos.end()) {
        if (answered != nullptr) *answered = ex.error;
        return OkStatus();
      }
      std::string text = what + ": " + std::strerror(ex.error);
      if (!ex.ext_ack.empty()) {
        text += " (" + ex.ext_ack + ")";
      }
      return Error(kErrKernel, text);
    }
    return OkStatus();
  }
}

Status Socket::Request(nl_msg* msg, const std::string& what, std::initializer_list<int> ok_errnos) {
  return Transact(msg, what, nullptr, ok_errnos);
}

Result<int> Socket::RequestErrno(nl_msg* msg, const std::string& what,
                                 std::initializer_list<int> ok_errnos) {
  int answered = 0;
  NG_RETURN_IF_ERROR(Transact(msg, what, nullptr, ok_errnos, &answered));
  return answered;
}

Status Socket::Dump(nl_msg* msg, const std::string& what,
                    const std::function<void(const nlmsghdr*)>& on_message,
                    std::initializer_list<int> ok_errnos) {
  return Transact(msg, what, &on_message, ok_errnos);
}

}  // namespace nodegate::netlink
