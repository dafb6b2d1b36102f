#pragma once
// Plugin logging. stdout belongs to the CNI protocol, so logs go to stderr (warning level by
// default, NODEGATE_LOG_LEVEL overrides) and, when the network config sets "logFile", also to
// that file with size-based rotation at "logLevel" (default info). The reference plugins log
// nothing; operators asked for this.

#include <string>

namespace nodegate::cni {

// Stderr-only logging for the start of an invocation.
void InitLogging(const std::string& plugin_name);

// Adds the operator's log file once the config is parsed. Never fails the invocation: a
// log file that cannot be opened is reported on stderr and ignored.
void ConfigureFileLogging(const std::string& plugin_name, const std::string& log_file,
                          const std::string& log_level);

}  // namespace nodegate::cni
