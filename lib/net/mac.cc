#include "lib/net/mac.h"

namespace nodegate::net {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Two hex digits at `text[at]`.
std::optional<uint8_t> HexByte(std::string_view text, size_t at) {
  if (at + 2 > text.size()) return std::nullopt;
  const int hi = HexDigit(text[at]);
  const int lo = HexDigit(text[at + 1]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

bool ValidLength(size_t bytes) { return bytes == 6 || bytes == 8 || bytes == 20; }

}  // namespace

std::optional<std::vector<uint8_t>> ParseMac(std::string_view text) {
  if (text.size() < 14) return std::nullopt;
  std::vector<uint8_t> out;
  if (text[2] == ':' || text[2] == '-') {
    // xx:xx:xx... : every third character is the separator.
    if ((text.size() + 1) % 3 != 0) return std::nullopt;
    const char sep = text[2];
    const size_t n = (text.size() + 1) / 3;
    if (!ValidLength(n)) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      if (i + 1 < n && text[3 * i + 2] != sep) return std::nullopt;
      auto b = HexByte(text, 3 * i);
      if (!b) return std::nullopt;
      out.push_back(*b);
    }
    return out;
  }
  if (text[4] == '.') {
    // xxxx.xxxx.xxxx: groups of two bytes.
    if ((text.size() + 1) % 5 != 0) return std::nullopt;
    const size_t n = 2 * (text.size() + 1) / 5;
    if (!ValidLength(n)) return std::nullopt;
    for (size_t i = 0; i < n / 2; ++i) {
      if (i + 1 < n / 2 && text[5 * i + 4] != '.') return std::nullopt;
      auto hi = HexByte(text, 5 * i);
      auto lo = HexByte(text, 5 * i + 2);
      if (!hi || !lo) return std::nullopt;
      out.push_back(*hi);
      out.push_back(*lo);
    }
    return out;
  }
  return std::nullopt;
}

std::string FormatMac(const std::vector<uint8_t>& mac) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < mac.size(); ++i) {
    if (i) out += ':';
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

bool IsUsableEthernetMac(const std::vector<uint8_t>& mac) {
  if (mac.size() != 6 || (mac[0] & 1) != 0) return false;
  for (uint8_t b : mac) {
    if (b != 0) return true;
  }
  return false;
}

}  // namespace nodegate::net
