#pragma once
// Plugin logging. stdout belongs to the CNI protocol, so logs go to stderr (warning level by
// default, NODEGATE_LOG_LEVEL overrides) and, when the network config sets "logFile", also to
// that file with size-based rotation at "logLevel" (default info). The reference plugins log
// nothing; operators asked for this.

#include <fmt/core.h>

#include <memory>
#include <string>

namespace nodegate::cni {

// Stderr-only logging for the start of an invocation.
void InitLogging(const std::string& plugin_name);

// Adds the operator's log file once the config is parsed. Never fails the invocation: a
// log file that cannot be opened is reported on stderr and ignored.
void ConfigureFileLogging(const std::string& plugin_name, const std::string& log_file,
                          const std::string& log_level);

// Logging of a plugin run inside another plugin's process (sibling.h): while it lives, records
// go to stderr under `plugin_name`, as InitLogging sets up, and the log file the sibling's
// config names is added to that logger alone; the previous logger is back after it.
class ScopedPluginLogging {
 public:
  explicit ScopedPluginLogging(const std::string& plugin_name);
  ~ScopedPluginLogging();
  ScopedPluginLogging(const ScopedPluginLogging&) = delete;
  ScopedPluginLogging& operator=(const ScopedPluginLogging&) = delete;

 private:
  std::shared_ptr<void> saved_;  // the spdlog::logger that was the default
};

enum class LogLevel { kDebug, kInfo, kWarn };

// One record: the format string with its arguments, written to the sinks InitLogging and
// ConfigureFileLogging set up. Code logs through LogDebug, LogInfo and LogWarn below, whose
// format strings are checked at compile time; only logging.cc includes spdlog, whose headers
// cost each translation unit that includes them about 8 s of compile time.
void WriteLog(LogLevel level, fmt::string_view format, fmt::format_args args);

template <typename... Args>
void LogDebug(fmt::format_string<Args...> format, Args&&... args) {
  WriteLog(LogLevel::kDebug, format, fmt::make_format_args(args...));
}

template <typename... Args>
void LogInfo(fmt::format_string<Args...> format, Args&&... args) {
  WriteLog(LogLevel::kInfo, format, fmt::make_format_args(args...));
}

template <typename... Args>
void LogWarn(fmt::format_string<Args...> format, Args&&... args) {
  WriteLog(LogLevel::kWarn, format, fmt::make_format_args(args...));
}

}  // namespace nodegate::cni
