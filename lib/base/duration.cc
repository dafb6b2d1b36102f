#include "lib/base/duration.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace nodegate {

std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1},  {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6},
      {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  if (text.empty()) {
    return std::nullopt;
  }
  if (text == "0") {
    return std::chrono::nanoseconds(0);
  }
  double total = 0;
  while (!text.empty()) {
    size_t digits = 0;
    bool dot = false;
    while (digits < text.size() &&
           ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !dot))) {
      dot = dot || text[digits] == '.';
      ++digits;
    }
    if (digits == 0 || (digits == 1 && text[0] == '.')) {
      return std::nullopt;
    }
    const double number = std::stod(std::string(text.substr(0, digits)));
    text.remove_prefix(digits);
    // The longest unit that matches ("ms" before "m").
    std::optional<double> scale;
    size_t unit_length = 0;
    for (const auto& [unit, factor] : kUnits) {
      if (text.substr(0, unit.size()) == unit && unit.size() > unit_length) {
        scale = factor;
        unit_length = unit.size();
      }
    }
    if (!scale) {
      return std::nullopt;
    }
    text.remove_prefix(unit_length);
    total += number * *scale;
  }
  if (!std::isfinite(total) || total > 9.2e18) {
    return std::nullopt;
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

}  // namespace nodegate
