#pragma once
// Netlink attributes as plain bytes, for code that builds or reads nfnetlink messages without
// libnl or libmnl (pure encoders that tests can run without a socket, batches of many
// messages in one buffer). Header-only.
//
//   netfilter::AttrWriter w;
//   w.PutString(NFTA_RULE_TABLE, "nat");
//   const size_t nest = w.BeginNested(NFTA_RULE_EXPRESSIONS);
//   ...
//   w.EndNested(nest);
//
//   auto attrs = netfilter::ParseAttrs(payload);   // nullopt when malformed
//   for (const auto& a : *attrs) if (a.type == NFTA_RULE_HANDLE) handle = a.Be64();

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nodegate::netfilter {

using ByteView = std::span<const uint8_t>;

// Appends attributes to a growing buffer; each is 4-byte aligned with zeroed padding.
class AttrWriter {
 public:
  void Put(uint16_t type, const void* data, size_t len) {
    uint8_t* payload = PutZeroed(type, len);
    if (len > 0) std::memcpy(payload, data, len);
  }
  void Put(uint16_t type, ByteView data) { Put(type, data.data(), data.size()); }
  // With the terminating NUL, as the kernel's NLA_STRING/NLA_NUL_STRING policies expect.
  void PutString(uint16_t type, std::string_view s) {
    uint8_t* payload = PutZeroed(type, s.size() + 1);
    if (!s.empty()) std::memcpy(payload, s.data(), s.size());
  }
  void PutBe32(uint16_t type, uint32_t value) {
    const uint32_t be = htonl(value);
    Put(type, &be, sizeof(be));
  }
  void PutBe64(uint16_t type, uint64_t value) {
    const uint32_t parts[2] = {htonl(static_cast<uint32_t>(value >> 32)),
                               htonl(static_cast<uint32_t>(value))};
    Put(type, parts, sizeof(parts));
  }
  // Already-encoded attributes (a nested payload built elsewhere).
  void Append(ByteView raw) { bytes_.insert(bytes_.end(), raw.begin(), raw.end()); }

  // A nested attribute (NLA_F_NESTED, as libmnl sets it): returns the offset for EndNested.
  size_t BeginNested(uint16_t type) {
    const size_t start = bytes_.size();
    Put(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
    return start;
  }
  void EndNested(size_t start) {
    const auto len = static_cast<uint16_t>(bytes_.size() - start);
    std::memcpy(bytes_.data() + start, &len, sizeof(len));
  }

  // Room for `bytes` more without reallocating (a rule's size is known before it is written).
  void Reserve(size_t bytes) { bytes_.reserve(bytes_.size() + bytes); }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  // An attribute header and `len` zero bytes (padded); returns where the payload goes.
  uint8_t* PutZeroed(uint16_t type, size_t len) {
    const size_t start = bytes_.size();
    const nlattr header{static_cast<uint16_t>(NLA_HDRLEN + len), type};
    bytes_.resize(start + NLA_ALIGN(NLA_HDRLEN + len), 0);
    std::memcpy(bytes_.data() + start, &header, sizeof(header));
    return bytes_.data() + start + NLA_HDRLEN;
  }

  std::vector<uint8_t> bytes_;
};

// One attribute of a parsed payload; `data` points into the parsed buffer.
struct Attr {
  uint16_t type = 0;  // NLA_TYPE_MASK applied
  ByteView data;

  uint8_t U8() const { return data.empty() ? 0 : data[0]; }
  uint32_t Be32() const {
    uint32_t v = 0;
    if (data.size() >= 4) std::memcpy(&v, data.data(), 4);
    return ntohl(v);
  }
  uint64_t Be64() const {
    uint32_t parts[2] = {0, 0};
    if (data.size() >= 8) std::memcpy(parts, data.data(), 8);
    return (static_cast<uint64_t>(ntohl(parts[0])) << 32) | ntohl(parts[1]);
  }
  // Up to the first NUL.
  std::string String() const { return std::string(View()); }
  // The same without a copy; valid while the parsed buffer is.
  std::string_view View() const {
    const auto* p = reinterpret_cast<const char*>(data.data());
    return std::string_view(p, strnlen(p, data.size()));
  }
};

// Calls `fn(const Attr&)` for each attribute of `payload` in order until it returns false.
// Returns false when a length field runs past the end (no allocation: for hot loops).
template <typename F>
bool ForEachAttr(ByteView payload, F&& fn) {
  size_t at = 0;
  while (at + NLA_HDRLEN <= payload.size()) {
    nlattr header;
    std::memcpy(&header, payload.data() + at, sizeof(header));
    if (header.nla_len < NLA_HDRLEN || at + header.nla_len > payload.size()) return false;
    const Attr attr{static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK),
                    payload.subspan(at + NLA_HDRLEN, header.nla_len - NLA_HDRLEN)};
    if (!fn(attr)) return true;
    at += NLA_ALIGN(header.nla_len);
  }
  return true;
}

// The attributes of one payload, in order. Up to kInline of them are kept in place (every
// nf_tables expression has fewer), so parsing a rule's expressions allocates nothing per
// expression; more move to the heap. Contiguous either way (a std::span<const Attr> views it).
class AttrList {
 public:
  static constexpr size_t kInline = 8;

  void push_back(const Attr& a) {
    if (!heap_.empty() || size_ == kInline) {
      if (heap_.empty()) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(a);
    } else {
      inline_[size_] = a;
    }
    ++size_;
  }
  const Attr* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Attr* begin() const { return data(); }
  const Attr* end() const { return data() + size_; }
  const Attr& operator[](size_t i) const { return data()[i]; }

 private:
  std::array<Attr, kInline> inline_{};
  std::vector<Attr> heap_;
  size_t size_ = 0;
};

// The attributes of `payload` in order; nullopt when a length field runs past the end.
inline std::optional<AttrList> ParseAttrs(ByteView payload) {
  AttrList out;
  const bool ok = ForEachAttr(payload, [&](const Attr& a) {
    out.push_back(a);
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

// The attributes of an nfnetlink message: what follows its nlmsghdr and nfgenmsg; nullopt when
// the message is too short to hold those headers.
inline std::optional<ByteView> NfnlPayload(const nlmsghdr* h) {
  constexpr size_t kHeaders = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
  if (h->nlmsg_len < kHeaders) return std::nullopt;
  return ByteView(reinterpret_cast<const uint8_t*>(h) + kHeaders, h->nlmsg_len - kHeaders);
}

// The last attribute of `type` in `attrs`, or nullptr.
inline const Attr* FindAttr(std::span<const Attr> attrs, uint16_t type) {
  const Attr* found = nullptr;
  for (const auto& a : attrs) {
    if (a.type == type) found = &a;
  }
  return found;
}

}  // namespace nodegate::netfilter
