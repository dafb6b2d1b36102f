#include "admit/api/quantity.h"

#include <limits>
#include <optional>
#include <string>

namespace nodegate::admit {
namespace {

constexpr int64_t kNanoPerUnit = 1'000'000'000;
constexpr int64_t kNanoPerMilli = 1'000'000;
// Magnitudes are capped here: 2^63 units, beyond anything a predicate compares.
constexpr UInt128 kMaxNano = static_cast<UInt128>(1) << 63 << 30;  // ~9.9e27 > 2^63 * 1e9

struct Suffix {
  int base = 10;  // 10 or 2
  int exponent = 0;
};

bool LookupSuffix(std::string_view s, Suffix* out) {
  struct Entry {
    std::string_view name;
    int base;
    int exponent;
  };
  static constexpr Entry kTable[] = {
      {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},
      {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
      {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
  };
  for (const Entry& e : kTable) {
    if (e.name == s) {
      *out = {e.base, e.exponent};
      return true;
    }
  }
  // Decimal exponent: e/E followed by a signed base-10 integer (strconv.ParseInt semantics).
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view digits = s.substr(1);
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty()) {
      return false;
    }
    int64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        return false;
      }
      // Exponents this large only saturate or vanish; clamp instead of overflowing.
      value = value > 1'000'000 ? value : value * 10 + (c - '0');
    }
    *out = {10, static_cast<int>(negative ? -value : value)};
    return true;
  }
  return false;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// SaturatingMul multiplies a magnitude, clamping at kMaxNano.
UInt128 SaturatingMul(UInt128 a, UInt128 b) {
  if (a == 0 || b == 0) {
    return 0;
  }
  if (a > kMaxNano / b) {
    return kMaxNano;
  }
  return a * b;
}

UInt128 Pow10(int n) {
  UInt128 r = 1;
  for (int i = 0; i < n; ++i) {
    r *= 10;
  }
  return r;
}

int64_t CeilDiv(Int128 nano, int64_t divisor) {
  const bool negative = nano < 0;
  const UInt128 magnitude = negative ? static_cast<UInt128>(-nano) : static_cast<UInt128>(nano);
  UInt128 q = magnitude / static_cast<UInt128>(divisor);
  if (magnitude % static_cast<UInt128>(divisor) != 0) {
    ++q;  // away from zero, like Quantity.Value
  }
  constexpr UInt128 kMax = static_cast<UInt128>(std::numeric_limits<int64_t>::max());
  if (q > kMax) {
    q = kMax;
  }
  const auto r = static_cast<int64_t>(q);
  return negative ? -r : r;
}

// The pieces of a quantity's text, as parseQuantityString splits it.
struct QuantityParts {
  bool positive = true;
  std::string_view num;
  std::string_view denom;
  std::string_view suffix;
};

size_t SkipDigits(std::string_view str, size_t pos) {
  while (pos < str.size() && IsDigit(str[pos])) {
    ++pos;
  }
  return pos;
}

// Sign, leading zeros, numerator, optional '.', denominator, suffix; nullopt when characters
// are left over.
std::optional<QuantityParts> SplitQuantity(std::string_view str) {
  QuantityParts text;
  size_t pos = 0;
  const size_t end = str.size();
  if (str[0] == '-' || str[0] == '+') {
    text.positive = str[0] == '+';
    ++pos;
  }
  while (pos < end && str[pos] == '0') {
    ++pos;
  }
  const size_t num_start = pos;
  pos = SkipDigits(str, pos);
  text.num = str.substr(num_start, pos - num_start);
  if (pos < end && str[pos] == '.') {
    ++pos;
    const size_t denom_start = pos;
    pos = SkipDigits(str, pos);
    text.denom = str.substr(denom_start, pos - denom_start);
  }
  const size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(str[pos]) != std::string_view::npos) {
    ++pos;
  }
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) {
    ++pos;
  }
  pos = SkipDigits(str, pos);
  if (pos != end) {
    return std::nullopt;
  }
  text.suffix = str.substr(suffix_start);
  return text;
}

// A non-zero value as mantissa * 10^scale; sticky when digits dropped past the 38 kept were
// not all zero (they still round the value up).
struct Decimal {
  UInt128 mantissa = 0;
  int64_t scale = 0;
  bool sticky = false;
};

// nullopt when every digit is zero.
std::optional<Decimal> SignificantDigits(const QuantityParts& text, const Suffix& suffix) {
  // Significant digits: numerator then denominator; the value is digits * 10^scale.
  std::string digits;
  digits.reserve(text.num.size() + text.denom.size());
  digits.append(text.num);
  digits.append(text.denom);
  Decimal d;
  d.scale = -static_cast<int64_t>(text.denom.size());
  if (suffix.base == 10) {
    d.scale += suffix.exponent;
  }
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    return std::nullopt;
  }
  digits.erase(0, first);
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++d.scale;
  }
  // Keep 38 significant digits (fits 128 bits); anything dropped only matters for rounding up,
  // which the sticky flag preserves.
  if (digits.size() > 38) {
    d.sticky = digits.find_first_not_of('0', 38) != std::string::npos;
    d.scale += static_cast<int64_t>(digits.size() - 38);
    digits.resize(38);
  }
  for (char c : digits) {
    d.mantissa = d.mantissa * 10 + static_cast<UInt128>(c - '0');
  }
  return d;
}

// mantissa * 2^binary_exponent * 10^nano_scale for nano_scale < 0, in whole nano-units; sets
// sticky when a fraction of a nano-unit is cut off.
UInt128 ScaleDown(UInt128 mantissa, int binary_exponent, int64_t nano_scale, bool& sticky) {
  // Divide first; values far below a nano only need to know they are not zero.
  int64_t shift = -nano_scale;
  if (shift > 38) {
    sticky = sticky || mantissa != 0;
    mantissa = 0;
    shift = 0;
  }
  const UInt128 divisor = Pow10(static_cast<int>(shift));
  UInt128 quotient = mantissa / divisor;
  UInt128 remainder = mantissa % divisor;
  UInt128 magnitude = SaturatingMul(quotient, static_cast<UInt128>(1) << binary_exponent);
  // Fractional part times 2^b by long division, one bit at a time (no overflow: r < divisor).
  UInt128 fraction = 0;
  for (int i = 0; i < binary_exponent; ++i) {
    remainder <<= 1;
    fraction <<= 1;
    if (remainder >= divisor) {
      remainder -= divisor;
      fraction |= 1;
    }
  }
  magnitude = magnitude + fraction > kMaxNano ? kMaxNano : magnitude + fraction;
  if (remainder != 0) {
    sticky = true;
  }
  return magnitude;
}

// The value's size in nano-units, rounded up and capped at kMaxNano (binary suffixes lower).
UInt128 NanoMagnitude(Decimal d, const Suffix& suffix) {
  const int binary_exponent = suffix.base == 2 ? suffix.exponent : 0;
  int64_t nano_scale = d.scale + 9;  // value in nano-units = mantissa * 2^b * 10^nano_scale

  UInt128 magnitude = 0;
  if (nano_scale >= 0) {
    magnitude = SaturatingMul(d.mantissa, static_cast<UInt128>(1) << binary_exponent);
    for (int64_t i = 0; i < nano_scale && magnitude != kMaxNano; ++i) {
      magnitude = SaturatingMul(magnitude, 10);
    }
  } else {
    magnitude = ScaleDown(d.mantissa, binary_exponent, nano_scale, d.sticky);
  }
  if (d.sticky && magnitude < kMaxNano) {
    ++magnitude;  // round up to the next nano, as ParseQuantity does
  }
  if (suffix.base == 2) {
    constexpr UInt128 kBinaryCap =
        static_cast<UInt128>(std::numeric_limits<int64_t>::max()) * kNanoPerUnit;
    if (magnitude > kBinaryCap) {
      magnitude = kBinaryCap;
    }
  }
  return magnitude;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view str) {
  if (str.empty()) {
    return Error(kErrDecode, std::string(kErrFormatWrong));
  }
  if (str == "0") {
    return Quantity(0);
  }
  const std::optional<QuantityParts> text = SplitQuantity(str);
  if (!text) {
    return Error(kErrDecode, std::string(kErrFormatWrong));
  }
  Suffix suffix;
  if (!LookupSuffix(text->suffix, &suffix)) {
    return Error(kErrDecode, std::string(kErrSuffix));
  }
  const std::optional<Decimal> decimal = SignificantDigits(*text, suffix);
  if (!decimal) {
    return Quantity(0);
  }
  const auto nano = static_cast<Int128>(NanoMagnitude(*decimal, suffix));
  return Quantity(text->positive ? nano : -nano);
}

Quantity Quantity::FromUnits(int64_t units) {
  return Quantity(static_cast<Int128>(units) * kNanoPerUnit);
}

Quantity Quantity::FromMilli(int64_t milli) {
  return Quantity(static_cast<Int128>(milli) * kNanoPerMilli);
}

int64_t Quantity::Value() const { return CeilDiv(nano_, kNanoPerUnit); }

int64_t Quantity::MilliValue() const { return CeilDiv(nano_, kNanoPerMilli); }

void Quantity::Add(const Quantity& other) {
  const Int128 max = static_cast<Int128>(kMaxNano) * 16;
  Int128 sum = nano_ + other.nano_;  // both are within ±kMaxNano*16, no overflow
  if (sum > max) {
    sum = max;
  } else if (sum < -max) {
    sum = -max;
  }
  nano_ = sum;
}

std::string FormatMilliCpu(int64_t milli) {
  if (milli % 1000 == 0) {
    return std::to_string(milli / 1000);
  }
  return std::to_string(milli) + "m";
}

std::string FormatBytes(int64_t bytes) {
  if (bytes == 0) {
    return "0";
  }
  static constexpr std::string_view kBinary[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 6; ++i) {
    const int shift = 60 - 10 * i;
    const int64_t unit = int64_t{1} << shift;
    if (bytes % unit == 0) {
      return std::to_string(bytes / unit) + std::string(kBinary[i]);
    }
  }
  static constexpr std::string_view kDecimal[] = {"E", "P", "T", "G", "M", "k"};
  int64_t unit = 1'000'000'000'000'000'000;
  for (std::string_view s : kDecimal) {
    if (bytes % unit == 0) {
      return std::to_string(bytes / unit) + std::string(s);
    }
    unit /= 1000;
  }
  return std::to_string(bytes);
}

}  // namespace nodegate::admit
