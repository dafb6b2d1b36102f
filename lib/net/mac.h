#pragma once
// Hardware addresses as Go's net.ParseMAC reads them (the reference plugins parse MACs with it):
// 6, 8 or 20 bytes written as xx:xx:..., xx-xx-... or xxxx.xxxx.xxxx, hex digits in either case.
// Formatting is lower-case with colons, as the kernel and Go print them.
//
//   std::optional<std::vector<uint8_t>> mac = net::ParseMac("C2:11:22:33:44:55");
//   net::FormatMac(*mac);  // "c2:11:22:33:44:55"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nodegate::net {

std::optional<std::vector<uint8_t>> ParseMac(std::string_view text);
std::string FormatMac(const std::vector<uint8_t>& mac);

// An Ethernet (6-byte) address a device can have: not multicast (the low bit of the first byte)
// and not all zeros. The kernel refuses others for a veth (EADDRNOTAVAIL).
bool IsUsableEthernetMac(const std::vector<uint8_t>& mac);

}  // namespace nodegate::net
