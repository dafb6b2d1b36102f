#pragma once
// Log: the webhook's log lines on stderr, one write each (so lines of concurrent reviews never
// interleave), as JSON lines (--log-format json, for log collectors: time, level, msg and the
// event's fields) or as text (--log-format text, for people: "nodegate webhook: LEVEL: msg
// key=value ...").
//
//   Log(Level::kInfo, "review", {{"uid", uid}, {"pod", "default/web"}, {"verdict", "denied"},
//                               {"latency_ms", 0.21}});

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace nodegate::webhook {

enum class LogFormat { kJson, kText };
enum class Level { kDebug, kInfo, kWarn, kError };

// SetLogFormat: before the first line; text is the default.
void SetLogFormat(LogFormat format);
LogFormat CurrentLogFormat();

using LogField = std::pair<std::string_view, nlohmann::json>;
void Log(Level level, std::string_view message, std::initializer_list<LogField> fields = {});

// FormatLine: the line Log writes (without its newline), for tests.
std::string FormatLine(LogFormat format, Level level, std::string_view message,
                       std::initializer_list<LogField> fields, std::string_view time);

}  // namespace nodegate::webhook
