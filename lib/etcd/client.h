#pragma once
// A client of an etcd cluster through its JSON gateway (POST /v3/kv/range, /v3/kv/txn) over
// HTTP/1.1, with TLS for https endpoints: no gRPC, no etcdctl process. Why the gateway and why
// OpenSSL: ipam/cluster/README.md, "The etcd client".
//
// Failover: requests go to one member at a time over one kept-alive connection. A member that
// refuses, does not answer within request_timeout, lost its leader or is not reachable within
// dial_timeout is left for the next one, round the list, with a short pause after each full
// round, until the call's deadline (timeout, and never later than the process's own deadline).
// Retrying a request on another member is safe for the callers of this client because every
// write they make is a transaction whose compares fail if the first attempt was applied.
//
// Authentication: with a username, the client authenticates on first use
// (POST /v3/auth/authenticate) and sends the token with every request, authenticating again
// once when a member says the token is not valid.
//
//   ClientOptions options{.endpoints = {"https://10.0.0.5:2379"}, .tls = {...}};
//   NG_ASSIGN_OR_RETURN(std::unique_ptr<Client> etcd, Client::Create(options));
//   NG_ASSIGN_OR_RETURN(RangeResponse r, etcd->Range({.key = "/a", .range_end = PrefixEnd("/a")}));
//
// Errors: 11 (try again later) when no member answered before the deadline, listing what each
// said; 7 when every member refused for a reason no retry changes (certificate, credentials);
// 5 when etcd refused the request itself; 7 or 5 from Create for bad endpoints or TLS files.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/etcd/connection.h"
#include "lib/etcd/endpoint.h"
#include "lib/etcd/kv.h"
#include "lib/etcd/tls.h"

namespace nodegate::etcd {

struct ClientOptions {
  std::vector<std::string> endpoints;
  TlsFiles tls;  // needed when an endpoint is https
  std::string username;
  std::string password;
  std::chrono::milliseconds timeout{5000};          // one call, failover included
  std::chrono::milliseconds dial_timeout{1000};     // connect and TLS handshake, per member
  std::chrono::milliseconds request_timeout{2000};  // one answer on a connection
  // Never past this point, whatever timeout says (the plugin's whole verb).
  std::optional<Deadline> deadline;
  // Where in the list to start (a node's hash spreads nodes over members); taken modulo.
  size_t first_endpoint = 0;
  // Largest response body accepted.
  size_t max_body = 64 << 20;
};

class Client : public Kv {
 public:
  static Result<std::unique_ptr<Client>> Create(ClientOptions options);
  ~Client() override;

  Result<RangeResponse> Range(const RangeRequest& request) override;
  Result<TxnResponse> Txn(const TxnRequest& request) override;

  // A client kept across calls (cluster-ipam's agent): each call's own deadline.
  void set_deadline(std::optional<Deadline> deadline) { options_.deadline = deadline; }

  // The endpoint of the last answer (for logs), or "" before any.
  std::string current_endpoint() const;
  // Requests sent, retries included (for tests and logs).
  int requests_sent() const { return requests_sent_; }

 private:
  explicit Client(ClientOptions options) : options_(std::move(options)) {}
  // POSTs `body` to `path` on some member; the 200 response's body.
  Result<std::string> Post(const std::string& path, const std::string& body);
  // One attempt on endpoint i: connect if needed, authenticate if needed, one round trip.
  Result<HttpResponse> Attempt(size_t i, const std::string& path, const std::string& body,
                               Deadline deadline);
  Status Authenticate(size_t i, Deadline deadline);

  ClientOptions options_;
  std::vector<Endpoint> endpoints_;
  std::unique_ptr<TlsContext> tls_;
  size_t current_ = 0;
  std::unique_ptr<Connection> connection_;  // to endpoints_[current_], when open
  std::string token_;
  bool answered_ = false;
  int requests_sent_ = 0;
};

}  // namespace nodegate::etcd
