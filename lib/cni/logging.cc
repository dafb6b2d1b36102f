#include "lib/cni/logging.h"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace nodegate::cni {
namespace {

constexpr size_t kMaxLogFileBytes = 10 * 1024 * 1024;
constexpr size_t kMaxLogFiles = 3;
// Time, plugin, PID (calls running at once interleave in one file), level, message.
constexpr char kPattern[] = "%Y-%m-%dT%H:%M:%S.%e %n[%P] %l: %v";

spdlog::level::level_enum LevelOr(const std::string& text, spdlog::level::level_enum fallback) {
  if (text.empty()) {
    return fallback;
  }
  auto level = spdlog::level::from_str(text);
  // from_str answers "off" for anything it does not know; only accept a real "off".
  if (level == spdlog::level::off && text != "off") {
    return fallback;
  }
  return level;
}

spdlog::level::level_enum SpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      break;
  }
  return spdlog::level::warn;
}

}  // namespace

void WriteLog(LogLevel level, fmt::string_view format, fmt::format_args args) {
  spdlog::logger* logger = spdlog::default_logger_raw();
  const spdlog::level::level_enum spdlog_level = SpdlogLevel(level);
  if (!logger->should_log(spdlog_level)) {
    return;
  }
  const std::string message = fmt::vformat(format, args);
  logger->log(spdlog_level, spdlog::string_view_t(message));
}

void InitLogging(const std::string& plugin_name) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  const char* env_level = std::getenv("NODEGATE_LOG_LEVEL");
  sink->set_level(LevelOr(env_level ? env_level : "", spdlog::level::warn));
  auto logger = std::make_shared<spdlog::logger>(plugin_name, sink);
  logger->set_level(spdlog::level::trace);
  logger->set_pattern(kPattern);
  spdlog::set_default_logger(logger);
}

ScopedPluginLogging::ScopedPluginLogging(const std::string& plugin_name)
    : saved_(spdlog::default_logger()) {
  InitLogging(plugin_name);
}

ScopedPluginLogging::~ScopedPluginLogging() {
  spdlog::set_default_logger(std::static_pointer_cast<spdlog::logger>(saved_));
}

void ConfigureFileLogging(const std::string& plugin_name, const std::string& log_file,
                          const std::string& log_level) {
  if (log_file.empty()) {
    return;
  }
  try {
    auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(log_file, kMaxLogFileBytes,
                                                                       kMaxLogFiles);
    sink->set_level(LevelOr(log_level, spdlog::level::info));
    // The logger's set_pattern reached only the sinks it had then.
    sink->set_pattern(kPattern);
    spdlog::default_logger()->sinks().push_back(sink);
    spdlog::default_logger()->flush_on(spdlog::level::trace);
  } catch (const spdlog::spdlog_ex& e) {
    spdlog::warn("{}: cannot open log file {}: {}", plugin_name, log_file, e.what());
  }
}

}  // namespace nodegate::cni
