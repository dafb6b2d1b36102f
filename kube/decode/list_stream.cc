#include "kube/decode/list_stream.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace nodegate::kube {
namespace {

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

Result<admit::Ok> ListStream::Fail(const std::string& what) const {
  return Error{"list response, at byte " + std::to_string(bytes_) + ": " + what};
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

Result<size_t> ListStream::StepItem(std::string_view data, size_t pos) {
  // The item began in this chunk (at item_begin_) when item_ is empty: it is handed over from
  // `data` itself, without a copy.
  const size_t start = item_.empty() ? item_begin_ : pos;
  const std::string_view carry(item_);
  while (pos < data.size()) {
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
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        if (c != '}') {
          return Fail("an item ends with ']'").error();
        }
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

Result<admit::Ok> ListStream::Feed(std::string_view data) {
  size_t pos = 0;
  while (pos < data.size()) {
    Result<size_t> next = pos;
    switch (state_) {
      case State::kStart:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] != '{') {
            bytes_ += pos;
            return Fail("expected a JSON object, got " + Shown(data[pos]));
          }
          state_ = State::kMemberKey;
          ++pos;
        }
        continue;
      case State::kMemberKey:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] == '}' && members_ == 0) {
            state_ = State::kDone;  // {}
          } else if (data[pos] == '"') {
            key_.clear();
            in_string_ = false;
            ++members_;
            state_ = State::kKeyString;
          } else {
            bytes_ += pos;
            return Fail("expected a member name, got " + Shown(data[pos]));
          }
          ++pos;
        }
        continue;
      case State::kKeyString:
        next = StepKey(data, pos);
        break;
      case State::kColon:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] != ':') {
            bytes_ += pos;
            return Fail("expected ':' after \"" + key_ + "\", got " + Shown(data[pos]));
          }
          state_ = State::kValue;
          ++pos;
        }
        continue;
      case State::kValue:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          const char c = data[pos];
          if (key_ == "items" && c == '[') {
            state_ = State::kItemsNext;
            ++pos;
            continue;
          }
          member_.clear();
          depth_ = 0;
          in_string_ = false;
          scalar_ = !(c == '{' || c == '[' || c == '"');
          state_ = State::kCapture;
        }
        continue;
      case State::kCapture:
        next = StepCapture(data, pos);
        break;
      case State::kItemsNext:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] == ']' && items_ == 0) {
            state_ = State::kMemberEnd;
          } else if (data[pos] == '{') {
            depth_ = 1;
            in_string_ = false;
            state_ = State::kItem;
            item_begin_ = pos;
            if (pos + 1 == data.size()) {
              item_ = "{";  // the item goes on in the next chunk
            }
          } else {
            bytes_ += pos;
            return Fail("expected an item (an object), got " + Shown(data[pos]));
          }
          ++pos;
        }
        continue;
      case State::kItem:
        next = StepItem(data, pos);
        break;
      case State::kItemsComma:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] == ',') {
            state_ = State::kItemsNext;
            // "[a, ]" is not JSON; kItemsNext refuses ']' once an item was seen.
          } else if (data[pos] == ']') {
            state_ = State::kMemberEnd;
          } else {
            bytes_ += pos;
            return Fail("expected ',' or ']' after an item, got " + Shown(data[pos]));
          }
          ++pos;
        }
        continue;
      case State::kMemberEnd:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          if (data[pos] == ',') {
            state_ = State::kMemberKey;
          } else if (data[pos] == '}') {
            state_ = State::kDone;
          } else {
            bytes_ += pos;
            return Fail("expected ',' or '}' after member \"" + key_ + "\", got " +
                        Shown(data[pos]));
          }
          ++pos;
        }
        continue;
      case State::kDone:
        pos = SkipSpace(data, pos);
        if (pos < data.size()) {
          bytes_ += pos;
          return Fail("data after the end of the list: " + Shown(data[pos]));
        }
        continue;
    }
    if (!next.ok()) {
      return next.error();
    }
    pos = *next;
  }
  bytes_ += data.size();
  return admit::Ok{};
}

Result<admit::Ok> ListStream::Finish() {
  if (state_ != State::kDone) {
    return Fail("the response ended before the list did");
  }
  return admit::Ok{};
}

}  // namespace nodegate::kube
