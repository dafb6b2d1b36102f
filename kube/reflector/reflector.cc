#include "kube/reflector/reflector.h"

#include <deque>
#include <functional>
#include <iostream>
#include <thread>
#include <utility>

#include "kube/decode/decode_worker.h"
#include "kube/decode/list_stream.h"

namespace nodegate::kube {
namespace {

// A list may take long to arrive whole (a gigabyte of pods); each piece must come in time.
constexpr size_t kLogSkippedAtMost = 1;

std::string Seconds(std::chrono::milliseconds d) {
  const std::string s = std::to_string(static_cast<double>(d.count()) / 1000.0);
  return s.substr(0, s.find('.') + 2) + " s";
}

}  // namespace

Reflector::Reflector(ReflectorOptions options, ApiClient& client, CacheSink& sink)
    : options_(std::move(options)),
      client_(client),
      sink_(sink),
      decoder_(options_.gates),
      backoff_(options_.initial_backoff),
      random_(std::random_device{}()) {}

void Reflector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  client_.Cancel();
  wake_.notify_all();
}

ReflectorCounters Reflector::counters() const {
  return ReflectorCounters{lists_.load(), relists_.load(), watch_errors_.load(), events_.load()};
}

void Reflector::Log(const std::string& text, bool problem) const {
  const std::string line = std::string(name()) + ": " + text;
  if (options_.log) {
    options_.log(problem, line);
  } else {
    std::cerr << "nodegate: " << line << "\n";
  }
}

bool Reflector::SleepUnlessStopped(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return !wake_.wait_for(lock, duration, [this] { return stopped_.load(); });
}

std::chrono::milliseconds Reflector::NextBackoff(const Attempt& failed) {
  if (failed.retry_after) {
    // The server said when: that, bounded so a wrong header cannot park the cache for long.
    return std::min(std::chrono::duration_cast<std::chrono::milliseconds>(*failed.retry_after),
                    2 * options_.max_backoff);
  }
  // Jitter spreads the retries of many replicas (client-go's backoff uses a factor of 1).
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  const auto wait = std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(backoff_.count()) * jitter(random_)));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  return wait;
}

std::string Reflector::Target(const std::string& query) const {
  std::string target = options_.path;
  std::string params = query;
  if (!options_.field_selector.empty()) {
    params += (params.empty() ? "" : "&") + std::string("fieldSelector=") + options_.field_selector;
  }
  return params.empty() ? target : target + "?" + params;
}

// Listed: what the pages of one list held, and what could not be read.
struct Reflector::Listed {
  std::vector<NodeRecord> nodes;
  std::vector<PodRecord> pods;
  size_t skipped = 0;
  size_t bytes = 0;
  std::string first_skip;
};

Reflector::Attempt Reflector::ListPage(const std::string& query, bool with_version, Listed& listed,
                                       std::string& listed_version, std::string& continue_token) {
  const KnownFacts known = [this](std::string_view uid, std::string_view rv) {
    return sink_.KnownPod(uid, rv);
  };
  // The decoder, the records and the counts are the worker's until Finish().
  DecodeWorker worker([&](std::string_view item) {
    if (options_.kind == Kind::kPod) {
      auto pod = decoder_.Pod(item, known);
      if (pod.ok()) {
        listed.pods.push_back(std::move(pod).value());
      } else if (listed.skipped++ < kLogSkippedAtMost) {
        listed.first_skip = pod.error().msg;
      }
    } else {
      auto node = decoder_.Node(item);
      if (node.ok()) {
        listed.nodes.push_back(std::move(node).value());
      } else if (listed.skipped++ < kLogSkippedAtMost) {
        listed.first_skip = node.error().msg;
      }
    }
  });
  ListStream list([&](std::string_view item) { worker.Push(item); });
  std::optional<Error> broken;
  auto got = client_.Stream(
      Target(query), options_.idle_timeout,
      [](const StreamHead& head) { return head.status == 200; },
      [&](std::string_view bytes) {
        auto fed = list.Feed(bytes);
        if (!fed.ok()) {
          broken = fed.error();
          return false;
        }
        return true;
      });
  if (!got.ok()) {
    return Attempt{Outcome::kFailed, "list: " + got.error().msg, std::nullopt};
  }
  if (got->status == 410 || (got->status == 504 && with_version)) {
    // 410: the version (or a continue token) left the window; 504 with a version: "too large
    // resource version", the cache has not caught up with it.
    return Attempt{Outcome::kGone, StatusMessage("list", got->status, got->body), std::nullopt};
  }
  if (got->status != 200) {
    return Attempt{Outcome::kFailed, StatusMessage("list", got->status, got->body),
                   got->retry_after};
  }
  if (got->idle) {
    return Attempt{
        Outcome::kFailed,
        "list: nothing arrived for " + std::to_string(options_.idle_timeout.count()) + " s",
        std::nullopt};
  }
  if (broken) {
    return Attempt{Outcome::kFailed, broken->msg, std::nullopt};
  }
  listed.bytes += list.bytes();
  if (auto done = list.Finish(); !done.ok()) {
    return Attempt{Outcome::kFailed, done.error().msg, std::nullopt};
  }
  if (list.resource_version().empty()) {
    return Attempt{Outcome::kFailed, "list: no metadata.resourceVersion", std::nullopt};
  }
  listed_version = list.resource_version();
  continue_token = list.continue_token();
  return Attempt{};
}

Reflector::Attempt Reflector::List(const std::string& resource_version,
                                   std::string& listed_version) {
  const auto started = Clock::now();
  Listed listed;
  // Room for what the last list held and a little more: a vector grown by doubling would hold
  // up to twice the list at its peak, while a relist's peak is what the cache must fit under.
  if (options_.kind == Kind::kPod) {
    listed.pods.reserve(last_count_ + last_count_ / 16);
  } else {
    listed.nodes.reserve(last_count_ + last_count_ / 16);
  }
  // A list from a version other than 0 is paged only when the API server paged the first one
  // (its watch cache is off): with a limit such a list is an exact read of etcd, without one
  // the watch cache serves it (client-go's reflector makes the same choice).
  const bool paged =
      resource_version.empty() || resource_version == "0" || paginated_result_.load();
  std::string continue_token;
  do {
    std::string query;
    if (paged) {
      query = "limit=" + std::to_string(options_.page_size);
    }
    if (!continue_token.empty()) {
      query += "&continue=" + UrlEncode(continue_token);  // a continuation carries no version
    } else if (!resource_version.empty()) {
      query += (query.empty() ? "" : "&") + std::string("resourceVersion=") +
               UrlEncode(resource_version);
    }
    Attempt page =
        ListPage(query, !resource_version.empty(), listed, listed_version, continue_token);
    if (page.outcome != Outcome::kOk) {
      return page;
    }
    if (!continue_token.empty() && resource_version == "0") {
      paginated_result_ = true;
    }
  } while (!continue_token.empty() && !stopped_);
  if (stopped_) {
    return Attempt{Outcome::kFailed, "stopped", std::nullopt};
  }
  Store(std::move(listed), resource_version, started);
  return Attempt{};
}

void Reflector::Store(Listed listed, const std::string& resource_version,
                      Clock::time_point started) {
  if (listed.skipped > 0) {
    Log(std::to_string(listed.skipped) +
        " object(s) could not be read and are left out; the first: " + listed.first_skip);
  }
  const auto received = Clock::now();
  const size_t count = options_.kind == Kind::kPod ? listed.pods.size() : listed.nodes.size();
  last_count_ = count;
  if (options_.kind == Kind::kPod) {
    sink_.ReplacePods(std::move(listed.pods));
  } else {
    sink_.ReplaceNodes(std::move(listed.nodes));
  }
  auto ms = [](Clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  Log("listed " + std::to_string(count) + " at resourceVersion " +
          (resource_version.empty() ? "\"\"" : resource_version) + " in " + ms(received - started) +
          " ms (" + std::to_string(listed.bytes >> 20) + " MiB), stored in " +
          ms(Clock::now() - received) + " ms",
      /*problem=*/false);
}

std::optional<Reflector::Attempt> Reflector::Apply(std::string_view line,
                                                   std::string& resource_version) {
  const KnownFacts known = [this](std::string_view uid, std::string_view rv) {
    return sink_.KnownPod(uid, rv);
  };
  auto event = decoder_.Event(line, options_.kind, known);
  if (!event.ok()) {
    // The stream cannot be trusted after a line that is not an event: watched again.
    return Attempt{Outcome::kFailed, "watch: " + event.error().msg, std::nullopt};
  }
  if (!event->unreadable.empty()) {
    // A well-formed event whose object admit cannot read: left out, the watch goes on.
    Log("event left out: " + event->unreadable);
  }
  switch (event->type) {
    case WatchEvent::Type::kError:
      if (event->error_code == 410) {
        return Attempt{Outcome::kGone, "", std::nullopt};
      }
      return Attempt{
          Outcome::kFailed,
          "watch: " + (event->error_message.empty()
                           ? "error event (code " + std::to_string(event->error_code) + ")"
                           : event->error_message),
          std::nullopt};
    case WatchEvent::Type::kBookmark:
      break;
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      if (event->pod) {
        sink_.UpsertPod(std::move(*event->pod));
      } else if (event->node) {
        sink_.UpsertNode(std::move(*event->node));
      }
      ++events_;
      break;
    case WatchEvent::Type::kDeleted:
      if (event->pod) {
        sink_.DeletePod(*event->pod);
      } else if (event->node) {
        sink_.DeleteNode(event->node->node->name);
      }
      ++events_;
      break;
  }
  if (!event->resource_version.empty()) {
    resource_version = event->resource_version;
  }
  Progress();
  return std::nullopt;
}

Reflector::Attempt Reflector::Watch(std::string& resource_version) {
  std::uniform_int_distribution<int64_t> spread(
      options_.min_watch_timeout.count(),
      std::max(options_.min_watch_timeout, options_.max_watch_timeout).count());
  const std::string query =
      "watch=1&allowWatchBookmarks=true&resourceVersion=" + UrlEncode(resource_version) +
      "&timeoutSeconds=" + std::to_string(spread(random_));
  std::optional<Attempt> ended;  // by an event: an error, 410, or a line that is not an event
  std::string pending;
  auto got = client_.Stream(
      Target(query), options_.watch_idle_timeout,
      [&](const StreamHead& head) { return head.status == 200; },
      [&](std::string_view bytes) {
        // One event a line; a line may come in pieces.
        size_t start = 0;
        for (size_t nl = bytes.find('\n'); nl != std::string_view::npos;
             nl = bytes.find('\n', start)) {
          std::string_view line = bytes.substr(start, nl - start);
          start = nl + 1;
          if (!pending.empty()) {
            pending.append(line);
            line = pending;
          }
          if (!line.empty()) {
            ended = Apply(line, resource_version);
          }
          pending.clear();
          if (ended) {
            return false;
          }
        }
        pending.append(bytes.substr(start));
        return true;
      });
  if (!got.ok()) {
    return Attempt{Outcome::kFailed, "watch: " + got.error().msg, std::nullopt};
  }
  if (got->status == 410 || (ended && ended->outcome == Outcome::kGone)) {
    return Attempt{Outcome::kGone, "", std::nullopt};
  }
  if (got->status != 200) {
    return Attempt{Outcome::kFailed, StatusMessage("watch", got->status, got->body),
                   got->retry_after};
  }
  if (ended) {
    return *ended;
  }
  // Ended by the server (timeoutSeconds), or silent for watch_idle_timeout: watched again at
  // once from the last version.
  return Attempt{};
}

void Reflector::Run() {
  std::optional<std::string> watch_from;
  std::string list_version = "0";  // the first list: from the API server's watch cache
  while (!stopped_) {
    if (!watch_from) {
      std::string listed;
      Attempt listed_attempt = List(list_version, listed);
      if (stopped_) {
        break;
      }
      if (listed_attempt.outcome == Outcome::kGone && !list_version.empty()) {
        Log(listed_attempt.message + "; listing again with a consistent read");
        list_version.clear();
        continue;
      }
      if (listed_attempt.outcome != Outcome::kOk) {
        ++watch_errors_;
        const auto wait = NextBackoff(listed_attempt);
        Log(listed_attempt.message + "; retrying in " + Seconds(wait));
        SleepUnlessStopped(wait);
        continue;
      }
      watch_from = listed;
      ++lists_;
      synced_ = true;
      Progress();
      backoff_ = options_.initial_backoff;
    }
    Attempt watched = Watch(*watch_from);
    if (stopped_) {
      break;
    }
    if (watched.outcome == Outcome::kGone) {
      Log("resourceVersion " + *watch_from + " is gone (410): listing again from it");
      ++relists_;
      list_version = *watch_from;  // not older than what was seen: the cache can serve it
      watch_from.reset();
      continue;
    }
    if (watched.outcome == Outcome::kFailed) {
      ++watch_errors_;
      const auto wait = NextBackoff(watched);
      Log(watched.message + "; watching again from resourceVersion " + *watch_from + " in " +
          Seconds(wait));
      SleepUnlessStopped(wait);
      continue;
    }
    backoff_ = options_.initial_backoff;
  }
}

}  // namespace nodegate::kube
