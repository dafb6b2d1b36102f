#pragma once
// Raw nfnetlink pieces shared by the code that talks to nf_tables without libnl or libmnl (the
// iptables-nft table writer, the set-element batch): the socket, one message, and the
// kernel's reason in an extended ack.
//
//   NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, netfilter::OpenNfnlSocket());
//   std::vector<uint8_t> get = netfilter::NfnlMessage(type, 0, seq, family, 0, attrs);

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/netfilter/nlattr.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {

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

}  // namespace nodegate::netfilter
