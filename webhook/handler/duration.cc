#include "webhook/handler/duration.h"

#include "lib/base/duration.h"

namespace nodegate::webhook {

std::optional<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  return ParseGoDuration(text);
}

std::optional<std::string_view> QueryParameter(std::string_view target, std::string_view name) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace nodegate::webhook
