#pragma once
// The calling thread's network namespace's listening sockets, read from the kernel through
// NETLINK_SOCK_DIAG (inet_diag, as `ss` does, without running it): TCP and SCTP sockets in
// LISTEN, and UDP sockets bound to a port and not connected, of both families.

#include <cstdint>
#include <vector>

#include "lib/base/result.h"
#include "ports/claims.h"

namespace nodegate::ports {

struct BoundSocket {
  PortKey key;
  uint64_t inode = 0;  // the socket's inode: /proc/PID/fd/N links to "socket:[INODE]"
};

// Errors: code 100 when a TCP or UDP dump fails. SCTP is skipped when the kernel has no
// sctp_diag (nothing can be bound to SCTP then either).
Result<std::vector<BoundSocket>> ListBoundSockets();

}  // namespace nodegate::ports
