#pragma once
// Reflector: keeps NodeStates in step with the API server, as client-go's reflector does: a
// list (paged), then a watch from the list's resourceVersion with bookmarks, resumed from the
// last resourceVersion seen when the connection ends, and a fresh list when the API server
// answers 410 Gone (the version has left its watch window). Errors back off (1 s doubling to
// 30 s) and are logged; the states keep what they had, so reviews go on from a stale cache.
//
// One reflector watches nodes, another the pods bound to a node (fieldSelector
// spec.nodeName!=, without Succeeded and Failed pods: they hold nothing).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "webhook/kube/client.h"
#include "webhook/state/node_states.h"

namespace nodegate::webhook {

using admit::Error;
using admit::Result;

enum class Resource { kNodes, kPods };

std::string_view ResourceName(Resource resource);

// The API paths of the two lists, and of the fallback read of one node.
std::string ListPath(Resource resource);
Result<std::optional<NodeSnapshot>> ReadNode(kube::ApiClient& client, const std::string& node,
                                             Clock::time_point deadline);

class Reflector {
 public:
  Reflector(Resource resource, kube::ApiClient& client, NodeStates& states,
            std::chrono::seconds watch_timeout = std::chrono::seconds(300));

  // Run: the thread's body, until Stop().
  void Run();
  void Stop();

  bool synced() const { return synced_.load(); }
  // LastHeard: when the API server last told this reflector anything (list, event, bookmark).
  Clock::time_point LastHeard() const {
    return Clock::time_point(Clock::duration(last_heard_.load()));
  }
  uint64_t relists() const { return relists_.load(); }

 private:
  // List: every object into the states; the list's resourceVersion, or an error.
  Result<std::string> List();
  // Watch: events into the states from `resource_version`, which follows every event. True
  // when the version is gone (410): the next step is a list.
  Result<bool> Watch(std::string& resource_version);
  // Apply: one watch event; false when it says the version is gone.
  Result<bool> Apply(std::string_view line, std::string& resource_version);
  void Heard() { last_heard_ = Clock::now().time_since_epoch().count(); }
  bool SleepUnlessStopped(std::chrono::milliseconds duration);

  const Resource resource_;
  kube::ApiClient& client_;
  NodeStates& states_;
  const std::chrono::seconds watch_timeout_;
  std::atomic<bool> synced_{false};
  std::atomic<Clock::rep> last_heard_{0};
  std::atomic<uint64_t> relists_{0};
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace nodegate::webhook
