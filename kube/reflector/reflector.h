#pragma once
// Reflector: keeps a cache (CacheSink) in step with one resource of the API server, as
// client-go's reflector does (k8s.io/client-go/tools/cache/reflector.go):
//   - the first list asks resourceVersion=0, so the API server answers from its watch cache
//     instead of a consistent read of etcd; it is paged with `limit` (an API server that serves
//     the cache unpaged sends it whole) and decoded as it arrives (kube/decode/list_stream.h);
//   - then a watch from the list's resourceVersion with bookmarks and a timeoutSeconds drawn
//     between the minimum and twice it, resumed from the last version seen when it ends;
//   - when the version has left the API server's window (410 Gone), a relist from the last
//     version seen, unpaged so the watch cache serves it (with a limit it would be an exact
//     read of etcd), unless the API server paged the first list; only when that too is refused
//     (410, or "too large resource version") a consistent relist, paged;
//   - failures back off exponentially with jitter (1 s to 30 s); a 429 or 503 with Retry-After
//     waits what the server asked.
// It also keeps track of *progress*: the last time the API server proved the cache current (a
// list finished, an event or a bookmark arrived). The API server sends a watch a bookmark
// about once a minute and 2 s before its timeoutSeconds runs out (k8s.io/apiserver cacher), so a
// watch asked for a short timeout shows progress at least that often on a quiet cluster, and a
// stalled watch or a revoked token shows as none. A watch silent for `watch_idle_timeout` is
// reopened from its resourceVersion.
//
//   Reflector pods(options, client, sink);
//   std::thread t([&] { pods.Run(); });  ...  pods.Stop(); t.join();

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client/client.h"
#include "kube/decode/objects.h"

namespace nodegate::kube {

// CacheSink: what a reflector keeps up to date. Called from the reflector's thread only.
class CacheSink {
 public:
  virtual ~CacheSink() = default;
  virtual void ReplaceNodes(std::vector<NodeRecord> nodes) = 0;  // a (re)list: exactly these
  virtual void UpsertNode(NodeRecord node) = 0;
  virtual void DeleteNode(const std::string& name) = 0;
  virtual void ReplacePods(std::vector<PodRecord> pods) = 0;  // a (re)list: exactly these
  virtual void UpsertPod(PodRecord pod) = 0;
  virtual void DeletePod(const PodRecord& pod) = 0;
  // KnownPod: the facts kept for that uid at that resourceVersion, or null; a relist then
  // shares them instead of holding a second copy.
  virtual admit::PodFactsPtr KnownPod(std::string_view uid, std::string_view resource_version) {
    (void)uid;
    (void)resource_version;
    return nullptr;
  }
};

struct ReflectorOptions {
  Kind kind = Kind::kPod;
  // The collection's path and field selector (already URL-encoded), e.g. "/api/v1/pods" and
  // "spec.nodeName%21%3D".
  std::string path;
  std::string field_selector;
  admit::FeatureGates gates;
  int page_size = 500;
  // Each watch asks a timeoutSeconds drawn between these (client-go: 5 to 10 minutes), so the
  // watches of many clients do not all end at once.
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::seconds max_watch_timeout{600};
  // No byte on a watch for this long: it is dead (reopened).
  std::chrono::seconds watch_idle_timeout{660};
  // No byte for this long on a list's connection: it is dead.
  std::chrono::seconds idle_timeout{60};
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  // Where the reflector says what happened: `problem` for failures ("pods: ...; retrying in
  // 2.1 s"), else news (a list done, its size and time). stderr if unset.
  std::function<void(bool problem, const std::string& message)> log;
};

struct ReflectorCounters {
  uint64_t lists = 0;         // lists finished (the first and every relist)
  uint64_t relists = 0;       // relists after a 410 Gone
  uint64_t watch_errors = 0;  // watches and lists that failed
  uint64_t events = 0;        // events applied
};

// WatchStatus: what a reflector tells of its cache's health (a seam for the webhook's tests).
class WatchStatus {
 public:
  virtual ~WatchStatus() = default;
  virtual std::string_view name() const = 0;  // "nodes", "pods"
  virtual bool synced() const = 0;            // listed once at least
  // LastProgress: when the API server last proved the cache current (see above).
  virtual Clock::time_point LastProgress() const = 0;
  virtual ReflectorCounters counters() const = 0;
};

class Reflector : public WatchStatus {
 public:
  Reflector(ReflectorOptions options, ApiClient& client, CacheSink& sink);

  // Run: the thread's body, until Stop().
  void Run();
  void Stop();

  bool synced() const override { return synced_.load(); }
  Clock::time_point LastProgress() const override {
    return Clock::time_point(Clock::duration(last_progress_.load()));
  }
  ReflectorCounters counters() const override;
  std::string_view name() const override { return options_.kind == Kind::kPod ? "pods" : "nodes"; }

 private:
  enum class Outcome { kOk, kGone, kFailed };
  struct Attempt {
    Outcome outcome = Outcome::kOk;
    std::string message;
    std::optional<std::chrono::seconds> retry_after;
  };

  // List: every object into the sink; the list's resourceVersion. `resource_version`: "0"
  // (the watch cache), a version (not older than it) or "" (a consistent read).
  Attempt List(const std::string& resource_version, std::string& listed_version);
  struct Listed;
  // ListPage: one page of a list (query: its limit, continue token or version) into `listed`;
  // the version it was read at and the next page's token.
  Attempt ListPage(const std::string& query, bool with_version, Listed& listed,
                   std::string& listed_version, std::string& continue_token);
  // Store: a whole list into the sink, in place of what it held.
  void Store(Listed listed, const std::string& resource_version, Clock::time_point started);
  // Watch: events into the sink from `resource_version`, which follows every event.
  Attempt Watch(std::string& resource_version);
  // Apply: one event line into the sink; what ends the watch (an error event, 410, a line that
  // is not an event), or nullopt to go on.
  std::optional<Attempt> Apply(std::string_view line, std::string& resource_version);
  std::string Target(const std::string& query) const;
  void Progress() { last_progress_ = Clock::now().time_since_epoch().count(); }
  void Log(const std::string& text, bool problem = true) const;
  bool SleepUnlessStopped(std::chrono::milliseconds duration);
  std::chrono::milliseconds NextBackoff(const Attempt& failed);

  const ReflectorOptions options_;
  ApiClient& client_;
  CacheSink& sink_;
  ObjectDecoder decoder_;
  std::atomic<bool> synced_{false};
  std::atomic<Clock::rep> last_progress_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> paginated_result_{false};  // the API server paged a resourceVersion=0 list
  size_t last_count_ = 0;                      // objects in the last list
  std::atomic<uint64_t> lists_{0}, relists_{0}, watch_errors_{0}, events_{0};
  std::chrono::milliseconds backoff_;
  std::mt19937 random_;
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace nodegate::kube
