#pragma once
// Result<T>: a value or an Error, never both. The library's only error currency: no exception
// crosses an API of admit/. Shaped like std::expected so it can be swapped for it in C++23.

#include <string>
#include <utility>
#include <variant>

namespace nodegate::admit {

// Error is a human-readable message that names where the problem is (file, document, field).
struct Error {
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit like std::expected
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Void results.
struct Ok {};
using VoidResult = Result<Ok>;

}  // namespace nodegate::admit
