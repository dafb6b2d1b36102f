#pragma once
// Status: what a predicate decides for one pod on one node, tri-state like the scheduler's
// framework.Status: Success, Unschedulable (may fit later, e.g. after preemption),
// UnschedulableAndUnresolvable (will not fit this node as it is), or Error (the check itself
// failed). A verdict is never an Error.
//
// Each failure keeps the upstream reason string verbatim and a `detail` that says what the
// scheduler never tells: which port, which holder, which taint, which expression, how much.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nodegate::admit {

enum class Code { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError };

std::string_view CodeName(Code code);

// InsufficientResource: the numbers of NodeResourcesFit's InsufficientResource (cpu in millicores,
// everything else in base units), which the kubelet prints.
struct InsufficientResource {
  std::string resource;
  int64_t requested = 0;
  int64_t used = 0;
  int64_t capacity = 0;
};

struct Failure {
  std::string reason;  // the upstream reason string
  std::string detail;  // our explanation
  std::optional<InsufficientResource> insufficient;
};

class Status {
 public:
  Status() = default;  // Success
  static Status Success() { return Status(); }
  static Status Unschedulable(std::vector<Failure> failures);
  static Status Unresolvable(std::vector<Failure> failures);
  static Status Unresolvable(std::string reason, std::string detail);
  static Status InternalError(std::string message);

  bool IsSuccess() const { return code_ == Code::kSuccess; }
  Code code() const { return code_; }
  const std::vector<Failure>& failures() const { return failures_; }
  // The upstream reason strings, in order.
  std::vector<std::string> Reasons() const;

  // Plugin: the predicate that produced this status (set by the runner).
  const std::string& plugin() const { return plugin_; }
  Status& WithPlugin(std::string plugin) {
    plugin_ = std::move(plugin);
    return *this;
  }

 private:
  Status(Code code, std::vector<Failure> failures) : code_(code), failures_(std::move(failures)) {}

  Code code_ = Code::kSuccess;
  std::vector<Failure> failures_;
  std::string plugin_;
};

}  // namespace nodegate::admit
