#include "lib/netfilter/nfnl.h"

#include <arpa/inet.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "lib/netfilter/release.h"

namespace nodegate::netfilter {
namespace {

constexpr size_t kMessageHeader = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
// The kernel makes no datagram larger than 32 KiB (a dump's skbs are capped there).
constexpr size_t kReceiveBuffer = 64 * 1024;

std::string ErrnoText(int err, const std::string& ext_ack) {
  std::string text = std::strerror(err);
  if (!ext_ack.empty()) text += " (" + ext_ack + ")";
  return text;
}

// A netlink send must fit the socket's send buffer: grow it for a large batch.
void FitSendBuffer(int fd, size_t bytes) {
  int current = 0;
  socklen_t len = sizeof(current);
  if (::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &current, &len) == 0 &&
      static_cast<size_t>(current) > bytes + 4096) {
    return;
  }
  const int wanted = static_cast<int>(bytes + 65536);
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &wanted, sizeof(wanted)) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &wanted, sizeof(wanted));
  }
}

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

int NfnlErrno(const nlmsghdr* h) {
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return EBADMSG;
  return -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
}

Error StaleGeneration(const std::string& what) {
  return Error(kErrKernel, what + ": " + kStaleGenerationDetails, kStaleGenerationDetails);
}

bool IsStaleGeneration(const Error& error) {
  return error.code == kErrKernel && error.details == kStaleGenerationDetails;
}

Status SendDatagram(int fd, std::span<const ByteView> parts, const std::string& what) {
  std::vector<iovec> iov;
  iov.reserve(parts.size());
  size_t total = 0;
  for (const ByteView part : parts) {
    iov.push_back({const_cast<uint8_t*>(part.data()), part.size()});
    total += part.size();
  }
  FitSendBuffer(fd, total);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  msghdr msg{};
  msg.msg_name = &kernel;
  msg.msg_namelen = sizeof(kernel);
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  const ssize_t n = ::sendmsg(fd, &msg, 0);
  if (n < 0) return Error(kErrKernel, what + ": " + std::strerror(errno));
  if (static_cast<size_t>(n) != total) return Error(kErrKernel, what + ": short send");
  return OkStatus();
}

Result<bool> ReceiveOnce(int fd, bool block, const std::string& what, const OnNfnlMessage& on) {
  constexpr unsigned kDatagrams = 2;
  // Not zeroed: zeroing would touch (fault in) every page of them on every call, where most
  // answers fill less than one.
  static thread_local const std::unique_ptr<uint8_t[]> buffer =
      std::make_unique_for_overwrite<uint8_t[]>(kDatagrams * kReceiveBuffer);
  std::array<iovec, kDatagrams> iov{};
  std::array<mmsghdr, kDatagrams> messages{};
  for (unsigned i = 0; i < kDatagrams; ++i) {
    iov[i] = {buffer.get() + i * kReceiveBuffer, kReceiveBuffer};
    messages[i].msg_hdr.msg_iov = &iov[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  int received;
  do {
    received = ::recvmmsg(fd, messages.data(), kDatagrams,
                          (block ? MSG_WAITFORONE : MSG_DONTWAIT) | MSG_TRUNC, nullptr);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    if (!block && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    return Error(kErrKernel, what + ": receive: " + std::strerror(errno));
  }
  for (int i = 0; i < received; ++i) {
    if (messages[i].msg_len > kReceiveBuffer) return Error(kErrKernel, what + ": reply truncated");
  }
  for (int i = 0; i < received; ++i) {
    int len = static_cast<int>(messages[i].msg_len);  // signed: NLMSG_NEXT may step past the end
    for (const auto* h = reinterpret_cast<const nlmsghdr*>(iov[i].iov_base); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      on(h);
    }
  }
  return received > 0;
}

Status Transact(int fd, ByteView request, const std::string& what, const OnNfnlMessage& on_reply,
                std::initializer_list<int> ok_errnos) {
  NG_RETURN_IF_ERROR(SendDatagram(fd, std::span<const ByteView>(&request, 1), what));
  const auto* sent = reinterpret_cast<const nlmsghdr*>(request.data());
  const uint32_t seq = sent->nlmsg_seq;
  const bool single_answer = (sent->nlmsg_flags & (NLM_F_DUMP | NLM_F_ACK)) == 0;
  bool done = false, interrupted = false;
  int error = 0;
  std::string ext_ack;
  while (!done) {
    NG_RETURN_IF_ERROR(ReceiveOnce(fd, true, what, [&](const nlmsghdr* h) {
      if (h->nlmsg_seq != seq || done) return;
      interrupted |= (h->nlmsg_flags & NLM_F_DUMP_INTR) != 0;
      if (h->nlmsg_type == NLMSG_DONE) {
        done = true;
      } else if (h->nlmsg_type == NLMSG_ERROR) {
        error = NfnlErrno(h);
        ext_ack = ExtAckMessage(h);
        done = true;
      } else {
        on_reply(h);
        done = single_answer;
      }
    }));
  }
  if (interrupted) return StaleGeneration(what);
  if (error != 0 && std::find(ok_errnos.begin(), ok_errnos.end(), error) == ok_errnos.end()) {
    return Error(kErrKernel, what + ": " + ErrnoText(error, ext_ack));
  }
  return OkStatus();
}

Status TransactSingles(int fd, uint32_t first_seq, const std::vector<SingleGet>& gets) {
  if (gets.empty()) return OkStatus();
  std::vector<ByteView> parts;
  parts.reserve(gets.size());
  for (const auto& get : gets) parts.emplace_back(get.message);
  NG_RETURN_IF_ERROR(SendDatagram(fd, parts, gets.front().what));
  size_t open = gets.size();
  std::vector<bool> answered(gets.size(), false);
  std::optional<Error> failed;
  while (open > 0) {
    NG_RETURN_IF_ERROR(ReceiveOnce(fd, true, gets.front().what, [&](const nlmsghdr* h) {
      const uint32_t index = h->nlmsg_seq - first_seq;
      if (h->nlmsg_seq < first_seq || index >= gets.size() || answered[index]) return;
      answered[index] = true;
      --open;
      if (h->nlmsg_type != NLMSG_ERROR) {
        gets[index].answer(h);
      } else if (const int error = NfnlErrno(h); error != 0 && error != ENOENT && !failed) {
        failed = Error(kErrKernel, gets[index].what + ": " + ErrnoText(error, ExtAckMessage(h)));
      }
    }));
  }
  if (failed) return *failed;
  return OkStatus();
}

void WriteGenerationRequest(uint8_t* at, uint32_t seq) {
  std::memset(at, 0, kGenerationRequestBytes);
  WriteNfnlMessage(at, NftMessageType(NFT_MSG_GETGEN), 0, seq, AF_UNSPEC, 0, {});
}

std::optional<uint32_t> GenerationOf(const nlmsghdr* h) {
  if (h->nlmsg_type != NftMessageType(NFT_MSG_NEWGEN)) return std::nullopt;
  const std::optional<ByteView> payload = NfnlPayload(h);
  if (!payload) return std::nullopt;
  std::optional<uint32_t> generation;
  ForEachAttr(*payload, [&](const Attr& a) {
    if (a.type == NFTA_GEN_ID && a.data.size() >= 4) generation = a.Be32();
    return !generation;
  });
  return generation;
}

SingleGet GenerationGet(uint32_t seq, const std::string& what,
                        std::optional<uint32_t>& generation) {
  std::vector<uint8_t> request(kGenerationRequestBytes);
  WriteGenerationRequest(request.data(), seq);
  return SingleGet{std::move(request), what + ": get nf_tables generation",
                   [&generation](const nlmsghdr* h) {
                     if (auto id = GenerationOf(h)) generation = id;
                   }};
}

Result<uint32_t> ReadGeneration(int fd, uint32_t seq, const std::string& what) {
  std::optional<uint32_t> generation;
  NG_RETURN_IF_ERROR(TransactSingles(fd, seq, {GenerationGet(seq, what, generation)}));
  if (!generation) return Error(kErrKernel, what + ": get nf_tables generation: no answer");
  return *generation;
}

Result<std::vector<BatchAnswer>> SendBatch(int fd, const NfnlBatch& batch,
                                           const std::string& what) {
  AttrWriter begin_attrs;
  if (batch.generation) begin_attrs.PutBe32(NFNL_BATCH_GENID, *batch.generation);
  const auto end_seq = static_cast<uint32_t>(batch.begin_seq + 1 + batch.count);
  const std::vector<uint8_t> begin =
      NfnlMessage(NFNL_MSG_BATCH_BEGIN, 0, batch.begin_seq, AF_UNSPEC, NFNL_SUBSYS_NFTABLES,
                  begin_attrs.bytes());
  const std::vector<uint8_t> end =
      NfnlMessage(NFNL_MSG_BATCH_END, 0, end_seq, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, {});
  std::vector<ByteView> parts;
  parts.reserve(batch.messages.size() + 2);
  parts.emplace_back(begin);
  parts.insert(parts.end(), batch.messages.begin(), batch.messages.end());
  parts.emplace_back(end);
  NG_RETURN_IF_ERROR(SendDatagram(fd, parts, what));

  std::vector<BatchAnswer> answers;
  int begin_error = 0;
  auto on_answer = [&](const nlmsghdr* h) {
    if (h->nlmsg_type != NLMSG_ERROR) return;
    const int error = NfnlErrno(h);
    if (h->nlmsg_seq == batch.begin_seq) {
      if (error != 0 && begin_error == 0) begin_error = error;
    } else if (h->nlmsg_seq > batch.begin_seq && h->nlmsg_seq < end_seq) {
      answers.push_back({h->nlmsg_seq, error, error != 0 ? ExtAckMessage(h) : std::string()});
    }
  };
  for (;;) {
    NG_ASSIGN_OR_RETURN(const bool got, ReceiveOnce(fd, false, what, on_answer));
    if (!got) break;
  }
  if (begin_error == ERESTART) return StaleGeneration(what);
  if (begin_error != 0) return Error(kErrKernel, what + ": " + std::strerror(begin_error));
  return answers;
}

}  // namespace nodegate::netfilter
