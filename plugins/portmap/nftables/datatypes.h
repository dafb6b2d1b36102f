#pragma once
// nft's numbers for what the backend writes into set declarations: datatypes
// (nftables include/datatype.h) and byte orders (BYTEORDER_*), which nft reads back to print a
// set's keys. Shared by the layout (rules.cc) and the conditions' anonymous sets.

#include <cstdint>

namespace nodegate::portmap::nft_types {

constexpr uint32_t kIpv4 = 7, kIpv6 = 8, kProto = 12, kService = 13, kMark = 19, kIfname = 41;
constexpr uint32_t kByteorderInvalid = 0, kHostEndian = 1, kBigEndian = 2;

}  // namespace nodegate::portmap::nft_types
