#pragma once
// IPv4/IPv6 addresses and prefixes as values: parsing, RFC 5952 formatting, masking,
// increment/decrement and ordering. Everything the plugins need to reason about addresses
// without touching the kernel.

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::net {

enum class Family : uint8_t { kV4 = 4, kV6 = 6 };

class IpAddress {
 public:
  IpAddress() = default;
  static IpAddress V4(uint32_t host_order);
  static IpAddress FromBytes(Family family, const uint8_t* bytes);

  // Accepts dotted quads and any RFC 4291 IPv6 text (IPv4-mapped IPv6 stays IPv6).
  static std::optional<IpAddress> Parse(std::string_view text);

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::kV4; }
  int bit_length() const { return is_v4() ? 32 : 128; }
  int byte_length() const { return is_v4() ? 4 : 16; }
  // Network-order bytes; only the first byte_length() are meaningful.
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  uint32_t v4_host_order() const;

  std::string ToString() const;  // dotted quad or RFC 5952

  // Adds one (wraps at the family's end; use IsLast() to avoid that).
  IpAddress Next() const;
  IpAddress Prev() const;
  bool IsZero() const;
  bool IsLoopback() const;
  bool IsLinkLocal() const;

  auto operator<=>(const IpAddress& other) const = default;

 private:
  Family family_ = Family::kV4;
  std::array<uint8_t, 16> bytes_{};
};

// An address with a prefix length; host bits are kept (10.88.0.2/16 stays as written).
class IpPrefix {
 public:
  IpPrefix() = default;
  IpPrefix(IpAddress address, int length) : address_(address), length_(length) {}

  // "a.b.c.d/n" or "x::y/n". A bare address is rejected unless allow_bare_address, in which
  // case it gets the full-length prefix (/32 or /128).
  static std::optional<IpPrefix> Parse(std::string_view text, bool allow_bare_address = false);

  const IpAddress& address() const { return address_; }
  int length() const { return length_; }
  Family family() const { return address_.family(); }

  IpAddress Network() const;      // host bits cleared
  IpAddress LastAddress() const;  // host bits set (the IPv4 broadcast address)
  IpPrefix Masked() const { return IpPrefix(Network(), length_); }
  bool Contains(const IpAddress& ip) const;
  bool Overlaps(const IpPrefix& other) const;

  std::string ToString() const;  // "<address>/<length>"

  auto operator<=>(const IpPrefix& other) const = default;

 private:
  IpAddress address_;
  int length_ = 0;
};

}  // namespace nodegate::net
