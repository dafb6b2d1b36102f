#include "kube/reflector/reflector.h"

#include <iostream>
#include <utility>

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

void Reflector::Log(const std::string& text) const {
  const std::string line = std::string(name()) + ": " + text;
  if (options_.log) {
    options_.log(line);
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
  std::string target = options_.path + "?" + query;
  if (!options_.field_selector.empty()) {
    target += "&fieldSelector=" + options_.field_selector;
  }
  return target;
}

Reflector::Attempt Reflector::List(const std::string& resource_version,
                                   std::string& listed_version) {
  std::vector<NodeRecord> nodes;
  std::vector<PodRecord> pods;
  size_t skipped = 0;
  std::string first_skip;
  std::string continue_token;
  const KnownFacts known = [this](std::string_view uid, std::string_view rv) {
    return sink_.KnownPod(uid, rv);
  };
  do {
    std::string query = "limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty()) {
      query += "&continue=" + UrlEncode(continue_token);  // a continuation carries no version
    } else if (!resource_version.empty()) {
      query += "&resourceVersion=" + UrlEncode(resource_version);
    }
    ListStream list([&](std::string_view item) {
      if (options_.kind == Kind::kPod) {
        auto pod = decoder_.Pod(item, known);
        if (pod.ok()) {
          pods.push_back(std::move(pod).value());
        } else if (skipped++ < kLogSkippedAtMost) {
          first_skip = pod.error().message;
        }
      } else {
        auto node = decoder_.Node(item);
        if (node.ok()) {
          nodes.push_back(std::move(node).value());
        } else if (skipped++ < kLogSkippedAtMost) {
          first_skip = node.error().message;
        }
      }
    });
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
      return Attempt{Outcome::kFailed, "list: " + got.error().message, std::nullopt};
    }
    if (got->status == 410 || (got->status == 504 && !resource_version.empty())) {
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
      return Attempt{Outcome::kFailed, broken->message, std::nullopt};
    }
    if (auto done = list.Finish(); !done.ok()) {
      return Attempt{Outcome::kFailed, done.error().message, std::nullopt};
    }
    if (list.resource_version().empty()) {
      return Attempt{Outcome::kFailed, "list: no metadata.resourceVersion", std::nullopt};
    }
    listed_version = list.resource_version();
    continue_token = list.continue_token();
  } while (!continue_token.empty() && !stopped_);
  if (stopped_) {
    return Attempt{Outcome::kFailed, "stopped", std::nullopt};
  }
  if (skipped > 0) {
    Log(std::to_string(skipped) +
        " object(s) could not be read and are left out; the first: " + first_skip);
  }
  if (options_.kind == Kind::kPod) {
    sink_.ReplacePods(std::move(pods));
  } else {
    sink_.ReplaceNodes(std::move(nodes));
  }
  return Attempt{};
}

Reflector::Attempt Reflector::Watch(std::string& resource_version) {
  std::uniform_int_distribution<int64_t> spread(
      options_.min_watch_timeout.count(),
      std::max(options_.min_watch_timeout, options_.max_watch_timeout).count());
  const std::string query =
      "watch=1&allowWatchBookmarks=true&resourceVersion=" + UrlEncode(resource_version) +
      "&timeoutSeconds=" + std::to_string(spread(random_));
  const KnownFacts known = [this](std::string_view uid, std::string_view rv) {
    return sink_.KnownPod(uid, rv);
  };
  bool gone = false;
  std::optional<Attempt> failed;
  std::string pending;
  auto apply = [&](std::string_view line) -> bool {
    auto event = decoder_.Event(line, options_.kind, known);
    if (!event.ok()) {
      // The stream cannot be trusted after a line that is not an event: watched again.
      failed = Attempt{Outcome::kFailed, "watch: " + event.error().message, std::nullopt};
      return false;
    }
    if (!event->unreadable.empty()) {
      // A well-formed event whose object admit cannot read: left out, the watch goes on.
      Log("event left out: " + event->unreadable);
    }
    switch (event->type) {
      case WatchEvent::Type::kError:
        if (event->error_code == 410) {
          gone = true;
        } else {
          failed = Attempt{
              Outcome::kFailed,
              "watch: " + (event->error_message.empty()
                               ? "error event (code " + std::to_string(event->error_code) + ")"
                               : event->error_message),
              std::nullopt};
        }
        return false;
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
    return true;
  };
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
          const bool go_on = line.empty() || apply(line);
          pending.clear();
          if (!go_on) {
            return false;
          }
        }
        pending.append(bytes.substr(start));
        return true;
      });
  if (!got.ok()) {
    return Attempt{Outcome::kFailed, "watch: " + got.error().message, std::nullopt};
  }
  if (got->status == 410 || gone) {
    return Attempt{Outcome::kGone, "", std::nullopt};
  }
  if (got->status != 200) {
    return Attempt{Outcome::kFailed, StatusMessage("watch", got->status, got->body),
                   got->retry_after};
  }
  if (failed) {
    return *failed;
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
