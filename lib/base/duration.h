#pragma once
// Durations as Go's time.ParseDuration writes them, which is how Kubernetes and etcd users
// write them: "5s", "500ms", "1m30s", "1.5h"; units ns, us (or µs), ms, s, m, h. Used by the
// webhook's flags and the API server's ?timeout=, and by cluster-ipam's etcd timeouts.

#include <chrono>
#include <optional>
#include <string_view>

namespace nodegate {

// nullopt when the text is not a non-negative duration.
std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

}  // namespace nodegate
