#include "lib/net/dns_query.h"

#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <cstring>
#include <memory>

namespace nodegate::net {
namespace {

constexpr size_t kHeaderBytes = 12;
// Room for any answer: res_send falls back to TCP when a UDP answer is truncated, and a TCP
// message is at most 64 KiB.
constexpr size_t kMaxAnswer = 65536;

uint16_t Read16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// A resolver state of its own per query (res_ninit reads /etc/resolv.conf), closed on return.
class ResolverState {
 public:
  ResolverState() : state_(std::make_unique<struct __res_state>()) {
    std::memset(state_.get(), 0, sizeof(struct __res_state));
    ok_ = res_ninit(state_.get()) == 0;
  }
  ~ResolverState() {
    if (ok_) res_nclose(state_.get());
  }
  ResolverState(const ResolverState&) = delete;
  ResolverState& operator=(const ResolverState&) = delete;

  bool ok() const { return ok_; }
  res_state get() { return state_.get(); }

 private:
  std::unique_ptr<struct __res_state> state_;
  bool ok_ = false;
};

// What a failed res_nsearch / res_nquery means, from its state's h_errno.
DnsOutcome FailureOutcome(ResolverState& state) {
  switch (state.get()->res_h_errno) {
    case HOST_NOT_FOUND:
      return DnsOutcome::kNoSuchName;
    case NO_DATA:
      return DnsOutcome::kNoData;
    case TRY_AGAIN:
      return DnsOutcome::kTryAgain;
    default:
      return DnsOutcome::kFailed;
  }
}

// Walks a response's answer section, calling fn(owner, type, rdata, rdata_length) for each
// record of class IN. False when the message is malformed.
template <typename Fn>
bool ForEachAnswer(std::span<const uint8_t> response, Fn&& fn) {
  if (response.size() < kHeaderBytes) return false;
  const uint8_t* const begin = response.data();
  const uint8_t* const end = begin + response.size();
  const int questions = Read16(begin + 4);
  const int answers = Read16(begin + 6);
  const uint8_t* p = begin + kHeaderBytes;
  for (int i = 0; i < questions; ++i) {
    const int skipped = dn_skipname(p, end);
    if (skipped < 0 || end - p < skipped + 4) return false;
    p += skipped + 4;  // name, type, class
  }
  char owner[NS_MAXDNAME];
  for (int i = 0; i < answers; ++i) {
    const int name_bytes = dn_expand(begin, end, p, owner, sizeof(owner));
    if (name_bytes < 0 || end - p < name_bytes + 10) return false;
    p += name_bytes;
    const uint16_t type = Read16(p);
    const uint16_t klass = Read16(p + 2);
    const uint16_t length = Read16(p + 8);
    p += 10;  // type, class, ttl, rdlength
    if (end - p < length) return false;
    if (klass == ns_c_in && !fn(owner, type, p, length)) return false;
    p += length;
  }
  return true;
}

}  // namespace

DnsAddresses ReadDnsAddresses(std::span<const uint8_t> response, Family family) {
  DnsAddresses out;
  const uint16_t wanted = family == Family::kV4 ? ns_t_a : ns_t_aaaa;
  const size_t wanted_length = family == Family::kV4 ? 4 : 16;
  const bool well_formed = ForEachAnswer(
      response, [&](const char* owner, uint16_t type, const uint8_t* data, uint16_t length) {
        if (type != wanted) return true;  // CNAMEs on the way, and anything else
        if (length != wanted_length) return false;
        if (out.addresses.empty()) out.canonical_name = owner;
        out.addresses.push_back(IpAddress::FromBytes(family, data));
        return true;
      });
  if (!well_formed) {
    out.addresses.clear();
    out.outcome = DnsOutcome::kFailed;
  } else {
    out.outcome = out.addresses.empty() ? DnsOutcome::kNoData : DnsOutcome::kFound;
  }
  return out;
}

DnsAddresses ReadDnsPointer(std::span<const uint8_t> response) {
  DnsAddresses out;
  out.outcome = DnsOutcome::kNoData;
  const uint8_t* const begin = response.data();
  const uint8_t* const end = begin + response.size();
  const bool well_formed = ForEachAnswer(
      response, [&](const char*, uint16_t type, const uint8_t* data, uint16_t length) {
        if (type != ns_t_ptr || out.outcome == DnsOutcome::kFound) return true;
        char name[NS_MAXDNAME];
        const int used = dn_expand(begin, end, data, name, sizeof(name));
        if (used < 0 || used > length) return false;
        out.canonical_name = name;
        out.outcome = DnsOutcome::kFound;
        return true;
      });
  if (!well_formed) return DnsAddresses{};
  return out;
}

std::string ReverseDnsName(const IpAddress& address) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name;
  const auto& bytes = address.bytes();
  for (int i = address.byte_length() - 1; i >= 0; --i) {
    if (address.is_v4()) {
      name += std::to_string(bytes[i]) + ".";
    } else {
      name += kHex[bytes[i] & 0xf];
      name += '.';
      name += kHex[bytes[i] >> 4];
      name += '.';
    }
  }
  return name + (address.is_v4() ? "in-addr.arpa" : "ip6.arpa");
}

DnsAddresses DnsLookUpAddresses(std::string_view name, Family family) {
  ResolverState state;
  if (!state.ok()) return DnsAddresses{};
  std::vector<uint8_t> answer(kMaxAnswer);
  const int length =
      res_nsearch(state.get(), std::string(name).c_str(), ns_c_in,
                  family == Family::kV4 ? ns_t_a : ns_t_aaaa, answer.data(), kMaxAnswer);
  if (length < 0) return DnsAddresses{FailureOutcome(state), {}, {}};
  answer.resize(std::min<size_t>(static_cast<size_t>(length), kMaxAnswer));
  return ReadDnsAddresses(answer, family);
}

DnsAddresses DnsLookUpPointer(const IpAddress& address) {
  ResolverState state;
  if (!state.ok()) return DnsAddresses{};
  std::vector<uint8_t> answer(kMaxAnswer);
  const int length = res_nquery(state.get(), ReverseDnsName(address).c_str(), ns_c_in, ns_t_ptr,
                                answer.data(), kMaxAnswer);
  if (length < 0) return DnsAddresses{FailureOutcome(state), {}, {}};
  answer.resize(std::min<size_t>(static_cast<size_t>(length), kMaxAnswer));
  return ReadDnsPointer(answer);
}

}  // namespace nodegate::net
