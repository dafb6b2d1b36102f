#pragma once
// One connection to one etcd member: TCP (non-blocking, TCP_NODELAY), TLS on top for https
// endpoints, and HTTP/1.1 round trips on it, every step bounded by a deadline.
//
// Errors: code 11 (try again later) for what another member or a later attempt may not meet
// (refused, reset, timed out, closed); code 7 for what no retry will change (the server's
// certificate does not verify against the CA, or names another host).

#include <chrono>
#include <memory>
#include <string_view>

#include "lib/base/result.h"
#include "lib/etcd/endpoint.h"
#include "lib/etcd/http.h"
#include "lib/etcd/tls.h"
#include "lib/sys/fd.h"

struct ssl_st;  // OpenSSL's SSL

namespace nodegate::etcd {

using Deadline = std::chrono::steady_clock::time_point;

class Connection {
 public:
  // Connects to the endpoint's host (each of its addresses in turn) and, with `tls`, completes
  // the TLS handshake, verifying the server's certificate and its name (or IP address).
  static Result<std::unique_ptr<Connection>> Open(const Endpoint& endpoint, TlsContext* tls,
                                                  Deadline deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `request` and reads one response. After an error the connection is unusable.
  Result<HttpResponse> RoundTrip(std::string_view request, Deadline deadline, size_t max_body);

  // Whether a response has been read on it (a kept-alive connection the server may have
  // closed since: a failure then is worth one retry on a new connection).
  bool used() const { return used_; }
  // Whether the last failure was a deadline passing (rather than the member closing).
  bool timed_out() const { return timed_out_; }

 private:
  Connection(sys::UniqueFd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
  Status Handshake(const Endpoint& endpoint, TlsContext& tls, Deadline deadline);
  Status WriteAll(std::string_view data, Deadline deadline);
  // Reads what is available (waiting until something is, or the deadline); 0 at end of stream.
  Result<size_t> ReadSome(char* buffer, size_t size, Deadline deadline);

  sys::UniqueFd fd_;
  std::string peer_;  // "10.0.0.5:2379", for messages
  ssl_st* ssl_ = nullptr;
  bool used_ = false;
  bool timed_out_ = false;
};

}  // namespace nodegate::etcd
