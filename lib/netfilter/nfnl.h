#pragma once
// The one nfnetlink transport of the tree: every piece of code that talks to nf_tables (the
// iptables-nft table writer, the nf_tables batch, the table reader, the socket release
// helper) goes through these, without libnl or libmnl.
//
//   socket     OpenNfnlSocket: bound, extended acks, short acks, a 1 MiB receive buffer.
//   messages   NfnlMessage / WriteNfnlMessage (in place, for batches of thousands).
//   requests   Transact: one request, its answer, dump or ack; TransactSingles: several
//              requests answered by one message each, in one round trip.
//   generation GenerationRequest / GenerationOf / ReadGeneration (NFT_MSG_GETGEN).
//   batches    SendBatch: BATCH_BEGIN (with the generation it was built on) ... BATCH_END in
//              one sendmsg, and every answer the kernel queued for it.
//
//   NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, netfilter::OpenNfnlSocket());
//   NG_ASSIGN_OR_RETURN(uint32_t generation, netfilter::ReadGeneration(fd.get(), 1, "what"));
//   NG_ASSIGN_OR_RETURN(auto answers, netfilter::SendBatch(fd.get(), {2, generation, views,
//                                                                    count}, "what"));
//
// A dump the kernel flags as interrupted, and a batch refused for its generation, are both
// StaleGeneration errors (IsStaleGeneration): what was read no longer holds; read again.

#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/netfilter/nlattr.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {

// The netlink message type of nf_tables message `msg` (NFT_MSG_*).
inline uint16_t NftMessageType(int msg) {
  return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg);
}

// A bound NETLINK_NETFILTER socket in the calling thread's network namespace, asking (best
// effort) for extended acks, short acks and a 1 MiB receive buffer. Errors: code 100.
Result<sys::UniqueFd> OpenNfnlSocket();

// nlmsghdr + nfgenmsg + attributes: the length of one message, and the message written to
// `at` (NfnlMessageLength(attrs.size()) zeroed bytes). NLM_F_REQUEST is always set.
size_t NfnlMessageLength(size_t attrs_size);
void WriteNfnlMessage(uint8_t* at, uint16_t type, uint16_t flags, uint32_t seq, uint8_t family,
                      uint16_t res_id, ByteView attrs);
std::vector<uint8_t> NfnlMessage(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family,
                                 uint16_t res_id, ByteView attrs);

// The kernel's own explanation in an NLMSG_ERROR's extended ack (NLMSGERR_ATTR_MSG), or "".
std::string ExtAckMessage(const nlmsghdr* h);

// The errno an NLMSG_ERROR carries: 0 for an ack, EBADMSG when the message is too short.
int NfnlErrno(const nlmsghdr* h);

// ---- stale reads

// The details of every error that means "the ruleset changed since it was read".
inline constexpr char kStaleGenerationDetails[] =
    "nf_tables ruleset changed since it was read (ERESTART)";
// Such an error (code 100), "<what>: <details>".
Error StaleGeneration(const std::string& what);
// Whether `error` is one: read again, rebuild, retry.
bool IsStaleGeneration(const Error& error);

// ---- requests

using OnNfnlMessage = std::function<void(const nlmsghdr*)>;

// Sends `parts` as one datagram (a batch must reach the kernel in one sendmsg), growing the
// socket's send buffer to fit. Errors (code 100): "<what>: <errno text>", or a short send.
Status SendDatagram(int fd, std::span<const ByteView> parts, const std::string& what);

// One receive of up to two datagrams (the second only if already queued), calling `on` for
// every message in them: a dump's last data and its NLMSG_DONE are two datagrams, so a short
// dump costs one receive instead of two. False when a non-blocking read found nothing.
Result<bool> ReceiveOnce(int fd, bool block, const std::string& what, const OnNfnlMessage& on);

// Sends `request` and reads its answers (those with its sequence number): for a dump until
// NLMSG_DONE, for a request with NLM_F_ACK until the ack, else until its one answer (a GET of
// one object is answered by the object or an error). `on_reply` sees every answer that is not
// an error or the end. An errno in `ok_errnos` ends it successfully. Errors (code 100):
// "<what>: <errno text> (<extended ack>)"; an interrupted dump is StaleGeneration(what).
Status Transact(int fd, ByteView request, const std::string& what, const OnNfnlMessage& on_reply,
                std::initializer_list<int> ok_errnos = {});

// A request answered by one message (the object asked for, or an error): no dump, no ack.
struct SingleGet {
  std::vector<uint8_t> message;
  std::string what;      // for errors: "get chain CNI-HOSTPORT-DNAT"
  OnNfnlMessage answer;  // the object's message
};
// Sends every request in one sendmsg (numbered first_seq, first_seq + 1, ...) and reads until
// each is answered: the kernel handles the messages of one send in order, so this is one
// round trip instead of one per request. ENOENT answers are no error (absent objects); the
// first other refusal is the error.
Status TransactSingles(int fd, uint32_t first_seq, const std::vector<SingleGet>& gets);

// ---- the ruleset's generation (every commit in the namespace increments it)

// The length of a GETGEN request, and the request written to `at` (no allocation: the socket
// release helper runs where nothing may allocate).
inline constexpr size_t kGenerationRequestBytes = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
void WriteGenerationRequest(uint8_t* at, uint32_t seq);
// The generation a NEWGEN answer carries; nullopt for any other message. Allocates nothing.
std::optional<uint32_t> GenerationOf(const nlmsghdr* h);
// GETGEN as one of several SingleGets: `generation` is set by its answer.
SingleGet GenerationGet(uint32_t seq, const std::string& what, std::optional<uint32_t>& generation);
// GETGEN and its answer. Errors (code 100): "<what>: get nf_tables generation: ...".
Result<uint32_t> ReadGeneration(int fd, uint32_t seq, const std::string& what);

// ---- batches

struct NfnlBatch {
  uint32_t begin_seq = 0;  // BATCH_BEGIN's; the messages must be numbered from begin_seq + 1
  // NFNL_BATCH_GENID (Linux 4.11): the kernel refuses the whole batch with ERESTART when
  // anything committed since this generation. None: no check.
  std::optional<uint32_t> generation;
  std::span<const ByteView> messages;  // the batch's messages, back to back
  size_t count = 0;                    // how many messages `messages` holds
};

// One answer to a message of a batch: an ack (error 0) or a refusal.
struct BatchAnswer {
  uint32_t seq = 0;
  int error = 0;
  std::string ext_ack;  // the kernel's reason, for a refusal
};

// Sends BATCH_BEGIN, the messages and BATCH_END in one sendmsg and reads every answer the
// kernel queued: it handles a batch inside the sendmsg that carries it, so the answers are all
// there when the send returns. A refusal is always answered; an ack only for a message that
// asked for one (NLM_F_ACK). Returns the answers to the messages, in the kernel's order.
// Errors (code 100): the send or a receive failed; BATCH_BEGIN refused
// (StaleGeneration(what) for ERESTART: nothing was applied).
Result<std::vector<BatchAnswer>> SendBatch(int fd, const NfnlBatch& batch, const std::string& what);

}  // namespace nodegate::netfilter
