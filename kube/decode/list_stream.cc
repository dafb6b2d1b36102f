#include "kube/decode/list_stream.h"

#include <bit>  // countr_zero
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/base/result.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nodegate::kube {
namespace {

// Block: what 64 bytes hold of the characters that matter to an item's structure, one bit per
// byte (bit i is byte i).
struct Block {
  uint64_t quote = 0;
  uint64_t backslash = 0;
  uint64_t open = 0;           // { and [
  uint64_t close = 0;          // } and ]
  uint64_t close_bracket = 0;  // ]
};

#if defined(__SSE2__)
Block Classify(const char* p) {
  Block b;
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open_brace = _mm_set1_epi8('{');
  const __m128i open_bracket = _mm_set1_epi8('[');
  const __m128i close_brace = _mm_set1_epi8('}');
  const __m128i close_bracket = _mm_set1_epi8(']');
  auto bits = [](__m128i eq, int i) {
    return static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(eq))) << (16 * i);
  };
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    b.quote |= bits(_mm_cmpeq_epi8(v, quote), i);
    b.backslash |= bits(_mm_cmpeq_epi8(v, backslash), i);
    b.open |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, open_brace), _mm_cmpeq_epi8(v, open_bracket)), i);
    const __m128i bracket = _mm_cmpeq_epi8(v, close_bracket);
    b.close_bracket |= bits(bracket, i);
    b.close |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, close_brace), bracket), i);
  }
  return b;
}
#else
Block Classify(const char* p) {
  Block b;
  for (int i = 0; i < 64; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    switch (p[i]) {
      case '"':
        b.quote |= bit;
        break;
      case '\\':
        b.backslash |= bit;
        break;
      case '{':
      case '[':
        b.open |= bit;
        break;
      case ']':
        b.close_bracket |= bit;
        b.close |= bit;
        break;
      case '}':
        b.close |= bit;
        break;
      default:
        break;
    }
  }
  return b;
}
#endif

constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
constexpr uint64_t kOddBits = ~kEvenBits;

// Escaped: the bytes a backslash escapes (the one right after an odd run of backslashes),
// given that byte 0 is escaped when `first_escaped`; `next_escaped` says whether the byte after
// the block is. A run is found by adding its first bit to it: the carry stops on the byte that
// ends it, whose position's parity against the run's start gives the run's length's parity.
uint64_t Escaped(uint64_t backslash, bool first_escaped, bool& next_escaped) {
  const uint64_t escapers = backslash & ~uint64_t{first_escaped};
  const uint64_t starts = escapers & ~(escapers << 1);
  uint64_t from_even = 0;
  uint64_t from_odd = 0;
  const bool even_overflow = __builtin_add_overflow(escapers, starts & kEvenBits, &from_even);
  const bool odd_overflow = __builtin_add_overflow(escapers, starts & kOddBits, &from_odd);
  (void)even_overflow;  // a run from an even bit to the end has an even length
  next_escaped = odd_overflow;
  return ((from_even & ~escapers) & kOddBits) | ((from_odd & ~escapers) & kEvenBits) |
         uint64_t{first_escaped};
}

// Count: the set bits (the baseline x86-64 the executables are built for has no popcnt; the
// library's fallback is a call per block).
int Count(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

// PrefixXor: bit i is the parity of the set bits at i and below: with quotes as input, the
// bytes from an opening quote up to (not including) its closing quote.
uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t SkipSpace(std::string_view data, size_t pos) {
  while (pos < data.size() && IsSpace(data[pos])) {
    ++pos;
  }
  return pos;
}

std::string Shown(char c) {
  if (c >= 0x20 && c < 0x7f) {
    return std::string("'") + c + "'";
  }
  return "byte " + std::to_string(static_cast<unsigned char>(c));
}

}  // namespace

ListStream::ListStream(ItemFn on_item, size_t max_item_bytes, size_t max_member_bytes)
    : on_item_(std::move(on_item)),
      max_item_bytes_(max_item_bytes),
      max_member_bytes_(max_member_bytes) {}

Status ListStream::Fail(const std::string& what) const {
  return Error(kErrDecode, "list response, at byte " + std::to_string(bytes_) + ": " + what);
}

size_t ListStream::ScanString(std::string_view data, size_t pos, std::string_view carry) {
  while (pos < data.size()) {
    const void* found = std::memchr(data.data() + pos, '"', data.size() - pos);
    if (found == nullptr) {
      return std::string_view::npos;
    }
    const size_t quote = static_cast<const char*>(found) - data.data();
    // An odd run of backslashes right before it escapes it; the run may begin in `carry`.
    size_t backslashes = 0;
    size_t i = quote;
    while (i > 0 && data[i - 1] == '\\') {
      ++backslashes;
      --i;
    }
    if (i == 0) {
      for (size_t j = carry.size(); j > 0 && carry[j - 1] == '\\'; --j) {
        ++backslashes;
      }
    }
    if (backslashes % 2 == 0) {
      return quote;
    }
    pos = quote + 1;
  }
  return std::string_view::npos;
}

Result<size_t> ListStream::StepKey(std::string_view data, size_t pos) {
  while (pos < data.size()) {
    const char c = data[pos++];
    if (in_string_) {  // in_string_ here means "the previous byte was a backslash"
      key_ += c;
      in_string_ = false;
    } else if (c == '\\') {
      key_ += c;
      in_string_ = true;
    } else if (c == '"') {
      state_ = State::kColon;
      return pos;
    } else {
      key_ += c;
    }
    if (key_.size() > max_member_bytes_) {
      return Fail("a member name longer than " + std::to_string(max_member_bytes_) + " bytes")
          .error();
    }
  }
  return pos;
}

Result<size_t> ListStream::StepCapture(std::string_view data, size_t pos) {
  const size_t start = pos;
  bool done = false;
  while (pos < data.size() && !done) {
    const char c = data[pos];
    if (in_string_) {
      const size_t quote = ScanString(data, pos, std::string_view(member_));
      if (quote == std::string_view::npos) {
        pos = data.size();
        break;
      }
      pos = quote + 1;
      in_string_ = false;
      done = depth_ == 0 && !scalar_;  // a string value ends with its quote
      continue;
    }
    if (scalar_ && depth_ == 0 && (c == ',' || c == '}' || IsSpace(c))) {
      done = true;  // the scalar's end is not part of it
      break;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        ++depth_;
        break;
      case '}':
      case ']':
        if (--depth_ < 0) {
          return Fail("unbalanced " + Shown(c)).error();
        }
        done = depth_ == 0;
        break;
      default:
        break;
    }
    ++pos;
  }
  member_.append(data.substr(start, pos - start));
  if (member_.size() > max_member_bytes_) {
    return Fail("member \"" + key_ + "\" is longer than " + std::to_string(max_member_bytes_) +
                " bytes")
        .error();
  }
  if (done) {
    EndMember();
    state_ = State::kMemberEnd;
  }
  return pos;
}

Result<ListStream::BlockStep> ListStream::StepBlock(std::string_view data, size_t& pos,
                                                    std::string_view carry) {
  Block b = Classify(data.data() + pos);
  // Inside a string, an odd run of backslashes right before this block escapes its first
  // byte; the run may begin in `carry`.
  bool first_escaped = false;
  if (in_string_) {
    size_t i = pos;
    while (i > 0 && data[i - 1] == '\\') {
      first_escaped = !first_escaped;
      --i;
    }
    for (size_t j = carry.size(); i == 0 && j > 0 && carry[j - 1] == '\\'; --j) {
      first_escaped = !first_escaped;
    }
  }
  bool next_escaped = false;
  const uint64_t escaped =
      b.backslash == 0 && !first_escaped ? 0 : Escaped(b.backslash, first_escaped, next_escaped);
  const uint64_t inside = PrefixXor(b.quote & ~escaped) ^ (in_string_ ? ~uint64_t{0} : 0);
  // A backslash outside a string escapes nothing (an invalid item, which its decoder
  // refuses): such blocks are walked byte by byte, as the rest is.
  if ((b.backslash & ~inside) != 0) {
    return BlockStep::kScalar;
  }
  const uint64_t open = b.open & ~inside;
  const uint64_t close = b.close & ~inside;
  if (Count(close) >= depth_) {
    // The item may end in this block: walk its braces in order.
    for (uint64_t bits = open | close; bits != 0; bits &= bits - 1) {
      const int i = std::countr_zero(bits);
      const uint64_t bit = uint64_t{1} << i;
      if ((open & bit) != 0) {
        ++depth_;
      } else if (--depth_ == 0) {
        if ((b.close_bracket & bit) != 0) {
          return Fail("an item ends with ']'").error();
        }
        pos += static_cast<size_t>(i) + 1;
        in_string_ = false;
        return BlockStep::kEnded;
      }
    }
  } else {
    depth_ += Count(open) - Count(close);
  }
  in_string_ = (inside >> 63) != 0;
  pos += 64;
  return BlockStep::kPast;
}

size_t ListStream::EndItem(std::string_view data, size_t start, size_t pos) {
  ++items_;
  if (item_.empty()) {
    on_item_(data.substr(start, pos - start));
  } else {
    item_.append(data.substr(start, pos - start));
    on_item_(item_);
    item_.clear();
  }
  state_ = State::kItemsComma;
  return pos;
}

Result<size_t> ListStream::StepItem(std::string_view data, size_t pos) {
  // The item began in this chunk (at item_begin_) when item_ is empty: it is handed over from
  // `data` itself, without a copy.
  const size_t start = item_.empty() ? item_begin_ : pos;
  const std::string_view carry(item_);
  size_t scalar_until = 0;  // bytes before this are walked one by one (they hold a backslash)
  while (pos < data.size()) {
    // 64 bytes at a time while they hold no backslash (most of an API object): strings
    // found by the parity of quotes, braces and brackets outside them counted.
    if (pos >= scalar_until && pos + 64 <= data.size()) {
      NG_ASSIGN_OR_RETURN(auto step, StepBlock(data, pos, carry));
      if (step == BlockStep::kEnded) {
        return EndItem(data, start, pos);
      }
      if (step == BlockStep::kPast) {
        continue;
      }
      scalar_until = pos + 64;
    }
    if (in_string_) {
      const size_t quote = ScanString(data, pos, carry);
      if (quote == std::string_view::npos) {
        pos = data.size();
        break;
      }
      pos = quote + 1;
      in_string_ = false;
      continue;
    }
    const char c = data[pos++];
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      if (c != '}') {
        return Fail("an item ends with ']'").error();
      }
      return EndItem(data, start, pos);
    }
  }
  item_.append(data.substr(start, pos - start));
  if (item_.size() > max_item_bytes_) {
    return Fail("an item longer than " + std::to_string(max_item_bytes_) + " bytes").error();
  }
  return pos;
}

void ListStream::EndMember() {
  if (key_ == "metadata" || key_ == "kind") {
    try {
      const nlohmann::json value = nlohmann::json::parse(member_);
      if (key_ == "kind" && value.is_string()) {
        kind_ = value.get<std::string>();
      } else if (key_ == "metadata" && value.is_object()) {
        if (auto rv = value.find("resourceVersion"); rv != value.end() && rv->is_string()) {
          resource_version_ = rv->get<std::string>();
        }
        if (auto token = value.find("continue"); token != value.end() && token->is_string()) {
          continue_token_ = token->get<std::string>();
        }
      }
    } catch (const nlohmann::json::exception&) {
      // A malformed metadata leaves resourceVersion empty: the caller refuses the list.
    }
  }
  member_.clear();
  depth_ = 0;
  in_string_ = false;
  scalar_ = false;
}

Result<size_t> ListStream::FailAt(size_t pos, const std::string& what) {
  bytes_ += pos;
  return Fail(what).error();
}

Result<size_t> ListStream::StepObject(std::string_view data, size_t pos) {
  pos = SkipSpace(data, pos);
  if (pos == data.size()) {
    return pos;
  }
  const char c = data[pos];
  switch (state_) {
    case State::kStart:
      if (c != '{') {
        return FailAt(pos, "expected a JSON object, got " + Shown(c));
      }
      state_ = State::kMemberKey;
      break;
    case State::kMemberKey:
      if (c == '}' && members_ == 0) {
        state_ = State::kDone;  // {}
      } else if (c == '"') {
        key_.clear();
        in_string_ = false;
        ++members_;
        state_ = State::kKeyString;
      } else {
        return FailAt(pos, "expected a member name, got " + Shown(c));
      }
      break;
    case State::kColon:
      if (c != ':') {
        return FailAt(pos, "expected ':' after \"" + key_ + "\", got " + Shown(c));
      }
      state_ = State::kValue;
      break;
    case State::kMemberEnd:
      if (c == ',') {
        state_ = State::kMemberKey;
      } else if (c == '}') {
        state_ = State::kDone;
      } else {
        return FailAt(pos, "expected ',' or '}' after member \"" + key_ + "\", got " + Shown(c));
      }
      break;
    default:  // kDone
      return FailAt(pos, "data after the end of the list: " + Shown(c));
  }
  return pos + 1;
}

Result<size_t> ListStream::StepItems(std::string_view data, size_t pos) {
  pos = SkipSpace(data, pos);
  if (pos == data.size()) {
    return pos;
  }
  const char c = data[pos];
  switch (state_) {
    case State::kValue:
      if (key_ == "items" && c == '[') {
        state_ = State::kItemsNext;
        return pos + 1;
      }
      member_.clear();
      depth_ = 0;
      in_string_ = false;
      scalar_ = !(c == '{' || c == '[' || c == '"');
      state_ = State::kCapture;
      return pos;
    case State::kItemsNext:
      if (c == ']' && items_ == 0) {
        state_ = State::kMemberEnd;
      } else if (c == '{') {
        depth_ = 1;
        in_string_ = false;
        state_ = State::kItem;
        item_begin_ = pos;
        if (pos + 1 == data.size()) {
          item_ = "{";  // the item goes on in the next chunk
        }
      } else {
        return FailAt(pos, "expected an item (an object), got " + Shown(c));
      }
      return pos + 1;
    default:  // kItemsComma
      if (c == ',') {
        state_ = State::kItemsNext;
        // "[a, ]" is not JSON; kItemsNext refuses ']' once an item was seen.
      } else if (c == ']') {
        state_ = State::kMemberEnd;
      } else {
        return FailAt(pos, "expected ',' or ']' after an item, got " + Shown(c));
      }
      return pos + 1;
  }
}

Status ListStream::Feed(std::string_view data) {
  size_t pos = 0;
  while (pos < data.size()) {
    Result<size_t> next = pos;
    switch (state_) {
      case State::kKeyString:
        next = StepKey(data, pos);
        break;
      case State::kCapture:
        next = StepCapture(data, pos);
        break;
      case State::kItem:
        next = StepItem(data, pos);
        break;
      case State::kValue:
      case State::kItemsNext:
      case State::kItemsComma:
        next = StepItems(data, pos);
        break;
      default:
        next = StepObject(data, pos);
        break;
    }
    NG_ASSIGN_OR_RETURN(pos, std::move(next));
  }
  bytes_ += data.size();
  return OkStatus();
}

Status ListStream::Finish() {
  if (state_ != State::kDone) {
    return Fail("the response ended before the list did");
  }
  return OkStatus();
}

}  // namespace nodegate::kube
