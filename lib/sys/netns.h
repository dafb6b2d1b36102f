#pragma once
// Entering a network namespace by path for the lifetime of a scope. setns() affects only the
// calling thread; our plugins are single-threaded, and tests that use threads must enter the
// namespace in the thread that does the work.
//
//   NG_ASSIGN_OR_RETURN(auto in_container, sys::NetnsScope::Enter(args.netns));
//   ... netlink calls now see the container's links ...
//   // leaving the scope returns to the original namespace

#include <memory>
#include <string>

#include "lib/base/result.h"
#include "lib/sys/fd.h"

namespace nodegate::sys {

class NetnsScope {
 public:
  // Errors: code 8 (invalid netns) when the path does not open or is not a netns.
  static Result<std::unique_ptr<NetnsScope>> Enter(const std::string& path);
  ~NetnsScope();
  NetnsScope(const NetnsScope&) = delete;
  NetnsScope& operator=(const NetnsScope&) = delete;

 private:
  explicit NetnsScope(UniqueFd original) : original_(std::move(original)) {}
  UniqueFd original_;
};

// True when `path` names the namespace the calling thread is in now.
bool IsCurrentNetns(const std::string& path);

}  // namespace nodegate::sys
