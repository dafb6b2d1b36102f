#include "webhook/handler/handler.h"

#include <utility>

#include "lib/build/build_info.h"
#include "webhook/handler/duration.h"
#include "webhook/log/log.h"
#include "webhook/metrics/names.h"
#include "webhook/metrics/process.h"
#include "webhook/review/review.h"

namespace nodegate::webhook {
namespace {

std::string_view PathOf(const std::string& target) {
  return std::string_view(target).substr(0, std::string_view(target).find('?'));
}

std::string ResourceLabel(std::string_view name) {
  return "resource=\"" + EscapeLabel(std::string(name)) + "\"";
}

}  // namespace

std::chrono::nanoseconds ReviewBudget(std::chrono::nanoseconds timeout, const std::string& target) {
  std::chrono::nanoseconds budget = timeout;
  if (auto param = QueryParameter(target, "timeout")) {
    if (auto asked = ParseDuration(*param); asked && *asked > std::chrono::nanoseconds(0)) {
      budget = std::min(budget, std::max(*asked / 2, *asked - std::chrono::seconds(1)));
    }
  }
  return budget;
}

Handler::Handler(HandlerParts parts, HandlerOptions options, std::function<Clock::time_point()> now)
    : parts_(std::move(parts)), options_(options), now_(std::move(now)) {}

bool Handler::Synced() const {
  for (const kube::WatchStatus* w : parts_.watches) {
    if (!w->synced()) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> Handler::Stale() const {
  const Clock::time_point now = now_();
  for (const kube::WatchStatus* w : parts_.watches) {
    if (!w->synced()) {
      continue;  // not listed yet: the review reads the node itself
    }
    const auto age = now - w->LastProgress();
    if (age > options_.max_cache_age) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(age).count();
      return "the cache has had no word from the API server about " + std::string(w->name()) +
             " for " + std::to_string(seconds) + " s (--max-cache-age " +
             std::to_string(
                 std::chrono::duration_cast<std::chrono::seconds>(options_.max_cache_age).count()) +
             "s)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> Handler::NotReady() const {
  if (shutting_down_) {
    return "shutting down";
  }
  if (!Synced()) {
    return "the node and pod cache has not synced";
  }
  return Stale();
}

net::HttpResponse Handler::Serve(const net::HttpRequest& request) {
  const std::string_view path = PathOf(request.target);
  if (path == "/validate") {
    if (request.method != "POST") {
      parts_.metrics->RecordRefused(405);
      return {405, "text/plain", "POST an AdmissionReview\n"};
    }
    return Validate(request);
  }
  return Probe(request, path);
}

net::HttpResponse Handler::ServeMetrics(const net::HttpRequest& request) {
  const std::string_view path = PathOf(request.target);
  if (path == "/metrics" && request.method == "GET") {
    return {200, "text/plain; version=0.0.4", parts_.metrics->Render(Samples())};
  }
  return Probe(request, path);
}

net::HttpResponse Handler::Probe(const net::HttpRequest& request, std::string_view path) {
  if (request.method == "GET" && path == "/healthz") {
    return {200, "text/plain", "ok\n"};
  }
  if (request.method == "GET" && path == "/readyz") {
    if (auto why = NotReady()) {
      return {503, "text/plain", *why + "\n"};
    }
    return {200, "text/plain", "ok\n"};
  }
  parts_.metrics->RecordRefused(404);
  return {404, "text/plain", "not found\n"};
}

net::HttpResponse Handler::Validate(const net::HttpRequest& request) {
  const auto started = Clock::now();
  auto review = DecodeReview(request.body);
  if (!review.ok()) {
    parts_.metrics->RecordRefused(400);
    Log(Level::kWarn, "review refused", {{"reason", review.error().msg}});
    return {400, "text/plain", review.error().msg + "\n"};
  }
  JudgeContext context;
  context.states = parts_.states;
  context.synced = [this] { return Synced(); };
  context.stale = [this] { return Stale(); };
  context.read_node = parts_.read_node;
  context.coordinator = parts_.coordinator;
  Judgement judgement =
      Judge(*review, context, started + ReviewBudget(options_.timeout, request.target));
  std::string body = EncodeReviewResponse(judgement.response);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  parts_.metrics->RecordReview(judgement.verdict, judgement.reason, seconds);
  // Every refusal and every warning is logged; a plain allow is only counted.
  if (!judgement.response.allowed || !judgement.response.warnings.empty()) {
    nlohmann::json warnings = judgement.response.warnings;
    Log(judgement.response.allowed ? Level::kWarn : Level::kInfo, "review",
        {{"uid", review->uid},
         {"pod",
          judgement.pod.empty() ? review->namespace_name + "/" + review->name : judgement.pod},
         {"node", judgement.node},
         {"verdict", judgement.verdict},
         {"reason", judgement.reason},
         {"message", judgement.response.allowed ? "" : judgement.response.message},
         {"warnings", std::move(warnings)},
         {"dry_run", review->dry_run},
         {"latency_ms", seconds * 1000}});
  }
  return {200, "application/json", std::move(body)};
}

std::vector<Sample> Handler::Samples() const {
  std::vector<Sample> out;
  const Clock::time_point now = now_();
  for (const kube::WatchStatus* w : parts_.watches) {
    const double age =
        w->synced() ? std::chrono::duration<double>(now - w->LastProgress()).count() : -1;
    out.push_back({kCacheAgeSeconds,
                   "Seconds since the API server last proved the cache current (a list, an "
                   "event, a bookmark); -1 before the first list.",
                   age, ResourceLabel(w->name())});
  }
  for (const kube::WatchStatus* w : parts_.watches) {
    const bool stale = w->synced() && now - w->LastProgress() > options_.max_cache_age;
    out.push_back({kCacheStale,
                   "1 while the cache is older than --max-cache-age (reviews are then allowed "
                   "unchecked), else 0.",
                   stale ? 1.0 : 0.0, ResourceLabel(w->name())});
  }
  out.push_back(
      {kCacheSynced, "1 once nodes and pods are listed, else 0.", Synced() ? 1.0 : 0.0, ""});
  const std::pair<std::string_view, std::string_view> counters[] = {
      {kCacheListsTotal, "Lists finished (the first and every relist)."},
      {kCacheRelistsTotal, "Lists made again because the watch's version was gone (410)."},
      {kWatchErrorsTotal, "Lists and watches that failed (each retried after a back-off)."},
      {kWatchEventsTotal, "Watch events applied to the cache."}};
  for (const auto& [name, help] : counters) {
    for (const kube::WatchStatus* w : parts_.watches) {
      const kube::ReflectorCounters c = w->counters();
      const uint64_t value = name == kCacheListsTotal     ? c.lists
                             : name == kCacheRelistsTotal ? c.relists
                             : name == kWatchErrorsTotal  ? c.watch_errors
                                                          : c.events;
      out.push_back({name, help, static_cast<double>(value), ResourceLabel(w->name()), true});
    }
  }
  out.push_back(
      {kCachedNodes, "Nodes in the cache.", static_cast<double>(parts_.states->Nodes()), ""});
  out.push_back({kCachedPods, "Pods bound to a node in the cache.",
                 static_cast<double>(parts_.states->Pods()), ""});
  out.push_back({kAssumedPods,
                 "Pods allowed (by this replica or, through claims, another) and not yet seen "
                 "in the watch.",
                 static_cast<double>(parts_.states->AssumedPods()), ""});
  if (parts_.coordinator != nullptr) {
    const ClaimCounters c = parts_.coordinator->counters();
    const std::pair<std::string_view, uint64_t> results[] = {
        {"recorded", c.recorded}, {"conflict", c.conflicts}, {"failed", c.failed}};
    for (const auto& [result, n] : results) {
      out.push_back({kClaimsTotal,
                     "Claims of allowed pods: recorded, beaten by another replica's write "
                     "(conflict), or not made in time (failed: allowed uncoordinated).",
                     static_cast<double>(n), "result=\"" + std::string(result) + "\"", true});
    }
  }
  if (parts_.certificate_expiry) {
    if (auto expiry = parts_.certificate_expiry()) {
      out.push_back(
          {kCertificateExpiry, "When the serving certificate expires, in seconds since the epoch.",
           static_cast<double>(
               std::chrono::duration_cast<std::chrono::seconds>(expiry->time_since_epoch())
                   .count()),
           ""});
    }
  }
  const BuildInfo& build = Build();
  out.push_back({kBuildInfo, "The build: version, commit, compiler, architecture (always 1).", 1,
                 "version=\"" + EscapeLabel(std::string(build.version)) + "\",commit=\"" +
                     EscapeLabel(std::string(build.commit)) + "\",compiler=\"" +
                     EscapeLabel(std::string(build.compiler)) + "\",arch=\"" +
                     EscapeLabel(std::string(build.arch)) + "\""});
  out.push_back({kShuttingDown, "1 once SIGTERM has arrived (readyz answers 503), else 0.",
                 shutting_down_ ? 1.0 : 0.0, ""});
  for (Sample& s : ProcessSamples()) {
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nodegate::webhook
