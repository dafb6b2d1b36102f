#pragma once
// Runs a callable when the scope ends unless Dismiss() was called: the rollback tool for a
// partial ADD. Register the undo step right after each successful do step, and dismiss all
// guards once the whole operation succeeded.
//
//   ScopeGuard undo_link([&] { DeleteLink(name); });
//   NG_RETURN_IF_ERROR(AddQdisc(...));
//   undo_link.Dismiss();

#include <utility>

namespace nodegate {

template <typename F>
class [[nodiscard]] ScopeGuard {
 public:
  explicit ScopeGuard(F fn) : fn_(std::move(fn)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard() {
    if (active_) {
      fn_();
    }
  }
  void Dismiss() { active_ = false; }

 private:
  F fn_;
  bool active_ = true;
};

}  // namespace nodegate
