#pragma once
// Bytes as lowercase hexadecimal text, two digits per byte, most significant nibble first.

#include <cstdint>
#include <span>
#include <string>

namespace nodegate {

std::string HexEncode(std::span<const uint8_t> bytes);

}  // namespace nodegate
