#pragma once
// Result<T> holds either a value or an Error (never both, never neither); Status is
// Result<void>. Shaped like std::expected (C++23) so it can be swapped for it later.
//
//   Result<int> ParsePort(std::string_view s);
//   NG_ASSIGN_OR_RETURN(int port, ParsePort(text));
//   NG_RETURN_IF_ERROR(Apply(plan));

#include <cassert>
#include <optional>
#include <utility>
#include <variant>

#include "lib/base/error.h"

namespace nodegate {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(state_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(state_));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const& {
    assert(!ok());
    return *error_;
  }
  Error&& error() && {
    assert(!ok());
    return std::move(*error_);
  }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status OkStatus() { return Status(); }

}  // namespace nodegate

#define NG_CONCAT_INNER_(a, b) a##b
#define NG_CONCAT_(a, b) NG_CONCAT_INNER_(a, b)

// Returns the error of `expr` (a Status or Result) from the enclosing function.
#define NG_RETURN_IF_ERROR(expr)            \
  do {                                      \
    auto ng_status_ = (expr);               \
    if (!ng_status_.ok()) {                 \
      return std::move(ng_status_).error(); \
    }                                       \
  } while (0)

// Declares or assigns `lhs` from a Result, returning its error from the enclosing function.
#define NG_ASSIGN_OR_RETURN(lhs, expr) \
  NG_ASSIGN_OR_RETURN_IMPL_(NG_CONCAT_(ng_result_, __LINE__), lhs, expr)
#define NG_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) {                                \
    return std::move(tmp).error();                \
  }                                               \
  lhs = std::move(tmp).value()
