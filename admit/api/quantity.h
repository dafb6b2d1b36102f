#pragma once
// Quantity: a Kubernetes resource quantity ("500m", "1.5Gi", "12e-3"), parsed exactly as
// apimachinery's resource.ParseQuantity does and kept as a count of nano-units so that sums of
// container requests stay exact until a pod's total is rounded once.
//
//   auto q = Quantity::Parse("1.5Gi");   // Result<Quantity>
//   q->Value();       // 1610612736 (bytes, rounded up)
//   q->MilliValue();  // rounded up to thousandths (cpu is compared in millicores)

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::admit {

// 128-bit integers (a GCC/Clang extension) hold nano-units without overflow.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

class Quantity {
 public:
  // The parse errors of apimachinery, verbatim.
  static constexpr std::string_view kErrFormatWrong =
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  static constexpr std::string_view kErrNumeric = "unable to parse numeric part of quantity";
  static constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";

  Quantity() = default;

  // Parse: the grammar of resource.ParseQuantity. Values finer than 1n round up (away from zero)
  // to the next nano; binary-suffixed values are capped at 2^63-1 units. Decimal values beyond
  // int64 saturate (upstream keeps them as big decimals; no predicate can tell the difference).
  static Result<Quantity> Parse(std::string_view text);

  static Quantity FromUnits(int64_t units);
  static Quantity FromMilli(int64_t milli);

  // Value: integer base units, rounded up away from zero, saturated to int64.
  int64_t Value() const;
  // MilliValue: integer thousandths, rounded up away from zero, saturated to int64.
  int64_t MilliValue() const;

  bool IsZero() const { return nano_ == 0; }
  bool IsNegative() const { return nano_ < 0; }

  // Add: exact (saturating) sum, like Quantity.Add.
  void Add(const Quantity& other);

  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nano_ == b.nano_; }
  friend bool operator<(const Quantity& a, const Quantity& b) { return a.nano_ < b.nano_; }

 private:
  explicit Quantity(Int128 nano) : nano_(nano) {}

  Int128 nano_ = 0;
};

// FormatMilliCpu: "250m" or "2" (whole cores).
std::string FormatMilliCpu(int64_t milli);
// FormatBytes: the shortest exact rendering with a binary or decimal suffix ("512Mi", "1G",
// "1000"), as kubectl prints canonical quantities.
std::string FormatBytes(int64_t bytes);

}  // namespace nodegate::admit
