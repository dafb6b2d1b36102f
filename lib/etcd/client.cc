#include "lib/etcd/client.h"

#include <algorithm>
#include <thread>

#include "lib/etcd/codec.h"

namespace nodegate::etcd {
namespace {

using Clock = std::chrono::steady_clock;

Deadline Earliest(Deadline a, Deadline b) { return a < b ? a : b; }

std::string Seconds(std::chrono::milliseconds d) {
  const auto ms = d.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

}  // namespace

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  if (options.endpoints.empty()) {
    return Error(kErrInvalidConfig, "no etcd endpoints configured");
  }
  std::unique_ptr<Client> client(new Client(std::move(options)));
  bool any_tls = false;
  for (const auto& text : client->options_.endpoints) {
    NG_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(text));
    any_tls = any_tls || endpoint.tls;
    client->endpoints_.push_back(std::move(endpoint));
  }
  if (any_tls) {
    NG_ASSIGN_OR_RETURN(client->tls_, TlsContext::Create(client->options_.tls));
  }
  if (client->options_.username.empty() != client->options_.password.empty()) {
    return Error(kErrInvalidConfig, "etcd.username and etcd.password go together");
  }
  client->current_ = client->options_.first_endpoint % client->endpoints_.size();
  return client;
}

std::string Client::current_endpoint() const {
  return answered_ ? endpoints_[current_].url : std::string();
}

Status Client::Authenticate(size_t i, Deadline deadline) {
  const std::string body = EncodeAuthenticate(options_.username, options_.password);
  const std::string request =
      FormatPost(endpoints_[i].Authority(), "/v3/auth/authenticate", body, "");
  ++requests_sent_;
  NG_ASSIGN_OR_RETURN(HttpResponse response,
                      connection_->RoundTrip(request, deadline, options_.max_body));
  if (response.status != 200) {
    const GatewayError error = DecodeGatewayError(response.status, response.body);
    if (error.retryable()) {
      return Error(kErrTryAgainLater, endpoints_[i].url + ": authenticate: " + error.message);
    }
    // Wrong name or password, or auth not enabled: the same on every member.
    return Error(kErrInvalidConfig, endpoints_[i].url + ": authenticate as \"" + options_.username +
                                        "\": " + error.message);
  }
  NG_ASSIGN_OR_RETURN(token_, DecodeAuthenticateResponse(response.body));
  return OkStatus();
}

Result<HttpResponse> Client::Attempt(size_t i, const std::string& path, const std::string& body,
                                     Deadline deadline) {
  const Endpoint& endpoint = endpoints_[i];
  // A kept-alive connection the member closed since its last answer fails at once; such a
  // failure gets one retry on a fresh connection.
  for (int fresh = 0; fresh < 2; ++fresh) {
    if (!connection_ || current_ != i) {
      connection_.reset();
      current_ = i;
      const Deadline dial = Earliest(deadline, Clock::now() + options_.dial_timeout);
      NG_ASSIGN_OR_RETURN(connection_,
                          Connection::Open(endpoint, endpoint.tls ? tls_.get() : nullptr, dial));
    }
    const Deadline answer = Earliest(deadline, Clock::now() + options_.request_timeout);
    if (!options_.username.empty() && token_.empty()) {
      if (Status auth = Authenticate(i, answer); !auth.ok()) {
        connection_.reset();
        return auth.error();
      }
    }
    const bool reused = connection_->used();
    ++requests_sent_;
    auto response = connection_->RoundTrip(FormatPost(endpoint.Authority(), path, body, token_),
                                           answer, options_.max_body);
    if (!response.ok()) {
      const bool closed_meanwhile =
          reused && !connection_->timed_out() && response.error().code == kErrTryAgainLater;
      connection_.reset();
      if (closed_meanwhile && fresh == 0) continue;
      return response.error();
    }
    if (!response->keep_alive) connection_.reset();
    return response;
  }
  return Error(kErrTryAgainLater, endpoint.url + ": connection lost");
}

Result<std::string> Client::Post(const std::string& path, const std::string& body) {
  Deadline deadline = Clock::now() + options_.timeout;
  if (options_.deadline) deadline = Earliest(deadline, *options_.deadline);
  const size_t n = endpoints_.size();
  std::vector<std::string> last_error(n);
  std::vector<bool> permanent(n, false);
  bool reauthenticated = false;
  auto backoff = std::chrono::milliseconds(50);
  for (;;) {
    const size_t start = current_;
    for (size_t k = 0; k < n && Clock::now() < deadline;) {
      const size_t i = (start + k) % n;
      auto response = Attempt(i, path, body, deadline);
      if (!response.ok()) {
        last_error[i] = response.error().msg;
        permanent[i] = response.error().code == kErrInvalidConfig;
        ++k;
        continue;
      }
      if (response->status == 200) {
        answered_ = true;
        return std::move(response->body);
      }
      const GatewayError error = DecodeGatewayError(response->status, response->body);
      if (error.unauthenticated() && !options_.username.empty() && !reauthenticated) {
        // The token expired (etcd's simple tokens live 5 minutes by default): once more, on
        // the same member.
        token_.clear();
        reauthenticated = true;
        continue;
      }
      if (error.retryable()) {
        last_error[i] = endpoints_[i].url + ": " + error.message;
        connection_.reset();
        ++k;
        continue;
      }
      const int code =
          error.code == static_cast<int>(GrpcCode::kPermissionDenied) || error.unauthenticated()
              ? kErrInvalidConfig
              : kErrIo;
      return Error(code, "etcd refused the request (" + endpoints_[i].url + "): " + error.message);
    }
    if (std::all_of(permanent.begin(), permanent.end(), [](bool p) { return p; })) {
      std::string all;
      for (const auto& e : last_error) all += (all.empty() ? "" : "; ") + e;
      return Error(kErrInvalidConfig, "etcd: no endpoint can be used: " + all);
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  std::string all;
  for (size_t i = 0; i < n; ++i) {
    all += (all.empty() ? "" : "; ") +
           (last_error[i].empty() ? endpoints_[i].url + ": not tried" : last_error[i]);
  }
  return Error(kErrTryAgainLater,
               "etcd: no endpoint answered within " + Seconds(options_.timeout) + ": " + all);
}

Result<RangeResponse> Client::Range(const RangeRequest& request) {
  NG_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/range", EncodeRange(request)));
  return DecodeRangeResponse(body);
}

Result<TxnResponse> Client::Txn(const TxnRequest& request) {
  if (request.success.size() > kMaxTxnOps || request.failure.size() > kMaxTxnOps) {
    return Error(kErrInternal, "a transaction of more than " + std::to_string(kMaxTxnOps) +
                                   " operations, which etcd refuses");
  }
  NG_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/txn", EncodeTxn(request)));
  return DecodeTxnResponse(body, request);
}

}  // namespace nodegate::etcd
