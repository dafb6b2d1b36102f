#include "admit/framework/status.h"

namespace nodegate::admit {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kError:
      return "Error";
  }
  return "Unknown";
}

Status Status::Unschedulable(std::vector<Failure> failures) {
  return Status(Code::kUnschedulable, std::move(failures));
}

Status Status::Unresolvable(std::vector<Failure> failures) {
  return Status(Code::kUnschedulableAndUnresolvable, std::move(failures));
}

Status Status::Unresolvable(std::string reason, std::string detail) {
  return Unresolvable({Failure{std::move(reason), std::move(detail), std::nullopt}});
}

Status Status::InternalError(std::string message) {
  return Status(Code::kError, {Failure{message, message, std::nullopt}});
}

std::vector<std::string> Status::Reasons() const {
  std::vector<std::string> out;
  out.reserve(failures_.size());
  for (const Failure& f : failures_) {
    out.push_back(f.reason);
  }
  return out;
}

}  // namespace nodegate::admit
