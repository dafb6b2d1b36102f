#pragma once
// An rtnetlink socket (libnl `nl_sock`) bound to the network namespace of the thread that
// opened it, with two primitives every kernel-facing library builds on:
//
//   NG_ASSIGN_OR_RETURN(auto sock, netlink::Socket::Open());
//   MsgPtr msg = NewMessage(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);
//   ... nlmsg_append / nla_put ...
//   NG_RETURN_IF_ERROR(sock.Request(msg.get(), "add tbf qdisc"));      // waits for the ACK
//   NG_RETURN_IF_ERROR(sock.Dump(msg.get(), "list qdiscs", on_message)); // also plain GETs
//
// Kernel errors become nodegate::Error with code 100 (kErrKernel), the errno text and, when the
// kernel sent one, its extended-ack message ("Exclusivity flag on, cannot modify"). Callers
// that expect an errno as a state rather than a failure (ENOENT on delete, for instance) list
// it in `ok_errnos`.

#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include "lib/base/result.h"

namespace nodegate::netlink {

struct MsgDeleter {
  void operator()(nl_msg* msg) const { nlmsg_free(msg); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

// A new message of `type` with `flags`; libnl adds NLM_F_REQUEST (and NLM_F_ACK) when it sends it.
MsgPtr NewMessage(int type, int flags);

class Socket {
 public:
  // Opens a netlink socket (NETLINK_ROUTE unless told) in the calling thread's current network
  // namespace.
  static Result<Socket> Open(int protocol = NETLINK_ROUTE);

  Socket(Socket&&) noexcept = default;
  Socket& operator=(Socket&&) noexcept = default;
  ~Socket() = default;

  nl_sock* get() const { return sock_.get(); }

  // Sends `msg` and waits for the kernel's ACK. `what` names the operation in errors; an
  // errno in `ok_errnos` counts as success.
  Status Request(nl_msg* msg, const std::string& what, std::initializer_list<int> ok_errnos = {});

  // As Request, telling which errno of `ok_errnos` the kernel answered (0: plain success), for
  // callers to whom EEXIST or ENOENT is a state: "created" or "was there".
  Result<int> RequestErrno(nl_msg* msg, const std::string& what,
                           std::initializer_list<int> ok_errnos);

  // Sends a GET or dump request and calls `on_message` for each reply once the kernel says
  // done. An errno in `ok_errnos` (say ENOENT for a GET of a missing object) ends the call
  // successfully, with the messages received so far. A dump the kernel interrupted (its
  // objects changed meanwhile) is asked again, up to 10 times in all, before code 11.
  Status Dump(nl_msg* msg, const std::string& what,
              const std::function<void(const nlmsghdr*)>& on_message,
              std::initializer_list<int> ok_errnos = {});

  // How many dumps the kernel interrupted and this socket asked again (each Dump tries up to
  // 10 times before code 11, "try again"; its callback sees only the complete answer).
  int dumps_repeated() const { return dumps_repeated_; }

 private:
  struct SockDeleter {
    void operator()(nl_sock* sock) const { nl_socket_free(sock); }
  };
  explicit Socket(nl_sock* sock) : sock_(sock) {}
  Status Transact(nl_msg* msg, const std::string& what,
                  const std::function<void(const nlmsghdr*)>* on_message,
                  std::initializer_list<int> ok_errnos, int* answered = nullptr);

  std::unique_ptr<nl_sock, SockDeleter> sock_;
  int dumps_repeated_ = 0;
};

// Maps a negative libnl return code (from the rtnl_* object API) to an Error (code 100).
Error LibnlError(int nl_error, const std::string& what);

}  // namespace nodegate::netlink
