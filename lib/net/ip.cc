#include "lib/net/ip.h"

#include <arpa/inet.h>

#include <charconv>

namespace nodegate::net {

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress ip;
  ip.family_ = Family::kV4;
  ip.bytes_[0] = static_cast<uint8_t>(host_order >> 24);
  ip.bytes_[1] = static_cast<uint8_t>(host_order >> 16);
  ip.bytes_[2] = static_cast<uint8_t>(host_order >> 8);
  ip.bytes_[3] = static_cast<uint8_t>(host_order);
  return ip;
}

IpAddress IpAddress::FromBytes(Family family, const uint8_t* bytes) {
  IpAddress ip;
  ip.family_ = family;
  for (int i = 0; i < ip.byte_length(); ++i) {
    ip.bytes_[i] = bytes[i];
  }
  return ip;
}

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  // A NUL would end the text early for inet_pton: "1.2.3.4\0garbage" is not an address.
  if (text.empty() || text.size() > INET6_ADDRSTRLEN || text.find('\0') != text.npos) {
    return std::nullopt;
  }
  const std::string s(text);
  IpAddress ip;
  if (s.find(':') == std::string::npos) {
    ip.family_ = Family::kV4;
    if (inet_pton(AF_INET, s.c_str(), ip.bytes_.data()) != 1) {
      return std::nullopt;
    }
    return ip;
  }
  ip.family_ = Family::kV6;
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes_.data()) != 1) {
    return std::nullopt;
  }
  return ip;
}

uint32_t IpAddress::v4_host_order() const {
  return (uint32_t{bytes_[0]} << 24) | (uint32_t{bytes_[1]} << 16) | (uint32_t{bytes_[2]} << 8) |
         uint32_t{bytes_[3]};
}

std::string IpAddress::ToString() const {
  if (is_v4()) {
    // By hand: inet_ntop formats IPv4 through sprintf, a thousand instructions an address, and
    // `nodegate ports` writes tens of thousands of them.
    std::string out;
    out.reserve(15);
    for (int i = 0; i < 4; ++i) {
      if (i > 0) out.push_back('.');
      const int b = bytes_[i];
      if (b >= 100) out.push_back(static_cast<char>('0' + b / 100));
      if (b >= 10) out.push_back(static_cast<char>('0' + b / 10 % 10));
      out.push_back(static_cast<char>('0' + b % 10));
    }
    return out;
  }
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes_.data(), buf, sizeof(buf));
  return buf;
}

IpAddress IpAddress::Next() const {
  IpAddress out = *this;
  for (int i = byte_length() - 1; i >= 0; --i) {
    if (++out.bytes_[i] != 0) {
      break;
    }
  }
  return out;
}

IpAddress IpAddress::Prev() const {
  IpAddress out = *this;
  for (int i = byte_length() - 1; i >= 0; --i) {
    if (out.bytes_[i]-- != 0) {
      break;
    }
  }
  return out;
}

bool IpAddress::IsZero() const {
  for (int i = 0; i < byte_length(); ++i) {
    if (bytes_[i] != 0) {
      return false;
    }
  }
  return true;
}

bool IpAddress::IsLoopback() const {
  if (is_v4()) {
    return bytes_[0] == 127;
  }
  for (int i = 0; i < 15; ++i) {
    if (bytes_[i] != 0) {
      return false;
    }
  }
  return bytes_[15] == 1;
}

bool IpAddress::IsLinkLocal() const {
  if (is_v4()) {
    return bytes_[0] == 169 && bytes_[1] == 254;
  }
  return bytes_[0] == 0xfe && (bytes_[1] & 0xc0) == 0x80;
}

std::optional<IpPrefix> IpPrefix::Parse(std::string_view text, bool allow_bare_address) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    if (!allow_bare_address) {
      return std::nullopt;
    }
    auto ip = IpAddress::Parse(text);
    if (!ip) {
      return std::nullopt;
    }
    return IpPrefix(*ip, ip->bit_length());
  }
  auto ip = IpAddress::Parse(text.substr(0, slash));
  if (!ip) {
    return std::nullopt;
  }
  const std::string_view len_text = text.substr(slash + 1);
  if (len_text.empty() || len_text.size() > 3) {
    return std::nullopt;
  }
  int length = -1;
  auto [ptr, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), length);
  if (ec != std::errc() || ptr != len_text.data() + len_text.size() || length < 0 ||
      length > ip->bit_length()) {
    return std::nullopt;
  }
  return IpPrefix(*ip, length);
}

namespace {

// Sets (set_bits=true) or clears the host bits of `ip` beyond `length`.
IpAddress ApplyMask(const IpAddress& ip, int length, bool set_bits) {
  std::array<uint8_t, 16> bytes = ip.bytes();
  for (int i = 0; i < ip.byte_length(); ++i) {
    const int bit_start = i * 8;
    uint8_t host_mask = 0;
    if (bit_start >= length) {
      host_mask = 0xff;
    } else if (bit_start + 8 > length) {
      host_mask = static_cast<uint8_t>(0xff >> (length - bit_start));
    }
    bytes[i] = set_bits ? (bytes[i] | host_mask) : (bytes[i] & ~host_mask);
  }
  return IpAddress::FromBytes(ip.family(), bytes.data());
}

}  // namespace

IpAddress IpPrefix::Network() const { return ApplyMask(address_, length_, false); }

IpAddress IpPrefix::LastAddress() const { return ApplyMask(address_, length_, true); }

bool IpPrefix::Contains(const IpAddress& ip) const {
  if (ip.family() != family()) {
    return false;
  }
  return ApplyMask(ip, length_, false) == Network();
}

bool IpPrefix::Overlaps(const IpPrefix& other) const {
  if (other.family() != family()) {
    return false;
  }
  return Contains(other.Network()) || other.Contains(Network());
}

std::string IpPrefix::ToString() const {
  return address_.ToString() + "/" + std::to_string(length_);
}

}  // namespace nodegate::net
