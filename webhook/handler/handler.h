#pragma once
// Handler: the webhook's answers to HTTP requests, apart from flags and wiring (cli/) and from
// the server (net/):
//   POST /validate   an AdmissionReview: decoded (review/), judged (judge/), answered, counted
//                    and logged;
//   GET /healthz     200 while the process serves;
//   GET /readyz      200 when the cache has synced, is not stale and no shutdown has begun;
//                    503 with the reason otherwise (so the Service sends reviews elsewhere);
//   GET /metrics     (the metrics port) Prometheus text, every name from metrics/names.h.
//
// Staleness: the cache is stale when a watched collection has not shown progress (a list, an
// event, a bookmark: kube/reflector/reflector.h) for longer than
// `max_cache_age`. Its verdicts could then be wrong either way (a pod deleted long ago still
// holding its port, a new one missing), so reviews are allowed with a warning that the node was
// not checked until the watch shows progress again.

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kube/reflector/reflector.h"
#include "webhook/claims/coordinator.h"
#include "webhook/judge/judge.h"
#include "webhook/metrics/metrics.h"
#include "webhook/net/server.h"
#include "webhook/state/node_states.h"

namespace nodegate::webhook {

struct HandlerOptions {
  std::chrono::nanoseconds timeout{std::chrono::seconds(4)};  // --timeout
  std::chrono::nanoseconds max_cache_age{std::chrono::seconds(60)};
};

struct HandlerParts {
  NodeStates* states = nullptr;
  std::vector<const kube::WatchStatus*> watches;  // nodes, pods
  ReadNodeFn read_node;                           // before the first lists
  Coordinator* coordinator = nullptr;             // null: no agreement between replicas
  Metrics* metrics = nullptr;
  // The serving certificate's expiry (nullopt: none loaded), for the metric.
  std::function<std::optional<std::chrono::system_clock::time_point>()> certificate_expiry;
};

class Handler {
 public:
  Handler(HandlerParts parts, HandlerOptions options,
          std::function<Clock::time_point()> now = Clock::now);

  net::HttpResponse Serve(const net::HttpRequest& request);
  net::HttpResponse ServeMetrics(const net::HttpRequest& request);

  bool Synced() const;
  // Stale: why the cache is not to be trusted now, or nullopt.
  std::optional<std::string> Stale() const;
  // NotReady: why /readyz answers 503, or nullopt.
  std::optional<std::string> NotReady() const;
  // QuickNow: a review needs no wait (synced, no agreement to reach): it may run on the I/O
  // thread that read it.
  bool QuickNow() const { return Synced() && parts_.coordinator == nullptr; }

  void BeginShutdown() { shutting_down_ = true; }
  bool ShuttingDown() const { return shutting_down_.load(); }

  std::vector<Sample> Samples() const;

 private:
  net::HttpResponse Probe(const net::HttpRequest& request, std::string_view path);
  net::HttpResponse Validate(const net::HttpRequest& request);

  const HandlerParts parts_;
  const HandlerOptions options_;
  const std::function<Clock::time_point()> now_;
  std::atomic<bool> shutting_down_{false};
};

// ReviewBudget: how long a review may take: --timeout, shortened by the request's ?timeout=
// (the configuration's timeoutSeconds) to that less one second (at least half of it), so a
// late answer never arrives after the API server gave up.
std::chrono::nanoseconds ReviewBudget(std::chrono::nanoseconds timeout, const std::string& target);

}  // namespace nodegate::webhook
