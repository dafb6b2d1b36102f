#pragma once
// Durations as Kubernetes writes them (Go's time.ParseDuration): "5s", "500ms", "1m30s",
// "1.5h"; units ns, us (or µs), ms, s, m, h. The API server puts one in the webhook's URL
// (?timeout=5s); the webhook's flags take the same form.

#include <chrono>
#include <optional>
#include <string_view>

namespace nodegate::webhook {

// ParseDuration: nullopt when the text is not a non-negative duration.
std::optional<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// QueryParameter: the value of `name` in a request target's query ("/validate?timeout=5s"), or
// nullopt; no percent-decoding (the API server sends the timeout as it is).
std::optional<std::string_view> QueryParameter(std::string_view target, std::string_view name);

}  // namespace nodegate::webhook
