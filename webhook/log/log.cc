#include "webhook/log/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

namespace nodegate::webhook {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

// Now: RFC 3339 in UTC with milliseconds.
std::string Now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(millis));
  return buf;
}

}  // namespace

void SetLogFormat(LogFormat format) { g_format = format; }
LogFormat CurrentLogFormat() { return g_format.load(); }

std::string FormatLine(LogFormat format, Level level, std::string_view message,
                       std::initializer_list<LogField> fields, std::string_view time) {
  // Bad UTF-8 (a pod name from a hostile request) is replaced, never a reason to lose a line.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (format == LogFormat::kJson) {
    nlohmann::json line = {{"time", time}, {"level", LevelName(level)}, {"msg", message}};
    for (const auto& [key, value] : fields) {
      line[std::string(key)] = value;
    }
    return line.dump(-1, ' ', false, kReplace);
  }
  std::string line = "nodegate webhook: ";
  if (level != Level::kInfo) {
    line += std::string(LevelName(level)) + ": ";
  }
  line += message;
  for (const auto& [key, value] : fields) {
    line += " " + std::string(key) + "=" +
            (value.is_string() ? value.get<std::string>() : value.dump(-1, ' ', false, kReplace));
  }
  return line;
}

void Log(Level level, std::string_view message, std::initializer_list<LogField> fields) {
  std::string line = FormatLine(g_format.load(), level, message, fields, Now()) + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) {
      break;
    }
    off += static_cast<size_t>(n);
  }
}

}  // namespace nodegate::webhook
