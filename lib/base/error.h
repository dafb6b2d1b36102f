#pragma once
// The one error currency of nodegate. An Error carries the CNI spec's numeric code, a short
// message and optional details; the CNI dispatcher prints it verbatim as the spec's error JSON.
// Non-CNI code (the admission checker, tools) uses the same type with the same codes.

#include <string>
#include <utility>

namespace nodegate {

// Error codes of CNI spec 1.1.0 (section "Error") plus the reference library's constants.
// Plugin-specific codes start at 100; each is described beside its constant below.
enum ErrorCode : int {
  kErrUnknown = 0,
  kErrIncompatibleVersion = 1,
  kErrUnsupportedField = 2,
  kErrUnknownContainer = 3,
  kErrInvalidEnvironment = 4,
  kErrIo = 5,
  kErrDecode = 6,
  kErrInvalidConfig = 7,
  kErrInvalidNetns = 8,
  kErrTryAgainLater = 11,
  kErrPluginNotAvailable = 50,
  kErrLimitedConnectivity = 51,
  // Plugin-specific (100+).
  kErrKernel = 100,            // a netlink/netfilter/tc operation failed
  kErrAddressExhausted = 101,  // IPAM: no free address in a range set
  kErrAddressInUse = 102,      // IPAM: requested address held by another container
  kErrCheckFailed = 103,       // CHECK: an expected object is missing or differs
  kErrNotImplemented = 110,    // a verb this build does not implement yet
  kErrInternal = 999,
};

struct Error {
  int code = kErrInternal;
  std::string msg;
  std::string details;

  Error() = default;
  Error(int c, std::string m, std::string d = {})
      : code(c), msg(std::move(m)), details(std::move(d)) {}

  // Returns a copy whose message is prefixed with `context: `, keeping code and details.
  [[nodiscard]] Error WithContext(const std::string& context) const {
    return Error(code, context + ": " + msg, details);
  }
};

}  // namespace nodegate
