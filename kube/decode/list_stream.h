#pragma once
// ListStream: a List response of the API server (PodList, NodeList, ...) taken apart as its
// bytes arrive, so that a list of 150,000 pods (about a gigabyte of JSON, sent in one response
// when the API server serves it from its watch cache) never sits in memory whole: each element
// of `items` is handed over as soon as its closing brace arrives, as one contiguous JSON text,
// and then forgotten. The list's other members (kind, apiVersion, metadata) are kept, small
// and bounded, for resourceVersion and continue.
//
//   ListStream list([&](std::string_view item) { decoder.Pod(item); });
//   for (each chunk of the body) { if (auto fed = list.Feed(chunk); !fed.ok()) ...; }
//   auto done = list.Finish();   // the body ended: a whole JSON object, or an error
//   list.resource_version(); list.continue_token();
//
// It checks the structure it walks (braces, brackets, strings and their escapes, the member
// list of the top object), not the JSON inside an item: the item's own decoder does that.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::kube {

class ListStream {
 public:
  using ItemFn = std::function<void(std::string_view item)>;

  // `max_item_bytes`: an item above it is an error (a pod is at most about 1.5 MiB, the API
  // server's request limit). `max_member_bytes` bounds each member other than items.
  explicit ListStream(ItemFn on_item, size_t max_item_bytes = 16u << 20,
                      size_t max_member_bytes = 1u << 20);

  Status Feed(std::string_view bytes);
  Status Finish();

  // From the list's metadata (empty until it has arrived).
  const std::string& resource_version() const { return resource_version_; }
  const std::string& continue_token() const { return continue_token_; }
  const std::string& kind() const { return kind_; }
  size_t items() const { return items_; }
  size_t bytes() const { return bytes_; }

 private:
  enum class State {
    kStart,       // before the top object's '{'
    kMemberKey,   // expecting a member's key (or '}' right after '{')
    kKeyString,   // inside the key string
    kColon,       // after the key
    kValue,       // before the member's value
    kCapture,     // inside a member other than items (kept in member_)
    kItemsNext,   // items: before an element or ']'
    kItem,        // items: inside an element (an object)
    kItemsComma,  // items: after an element
    kMemberEnd,   // after a member's value: ',' or '}'
    kDone,        // after the top object's '}': only whitespace may follow
  };

  Status Fail(const std::string& what) const;
  // The steps, each consuming from data[pos] and returning the new position (or an error).
  Result<size_t> StepKey(std::string_view data, size_t pos);
  Result<size_t> StepCapture(std::string_view data, size_t pos);
  Result<size_t> StepItem(std::string_view data, size_t pos);
  // StepObject: the top object's punctuation (kStart, kMemberKey, kColon, kMemberEnd, kDone).
  Result<size_t> StepObject(std::string_view data, size_t pos);
  // StepItems: a member's value begins, and the items array's punctuation around its items.
  Result<size_t> StepItems(std::string_view data, size_t pos);
  // StepBlock: the 64 bytes at data[pos] of an item: walked past (pos += 64), the item's end
  // (pos after it), or to be walked byte by byte (a backslash outside a string).
  enum class BlockStep { kPast, kEnded, kScalar };
  Result<BlockStep> StepBlock(std::string_view data, size_t& pos, std::string_view carry);
  // EndItem: the item from data[start] (after item_) to pos handed over; pos.
  size_t EndItem(std::string_view data, size_t start, size_t pos);
  Result<size_t> FailAt(size_t pos, const std::string& what);
  void EndMember();
  // ScanString: from inside a string, the position of its closing quote in data, or npos when
  // the string goes on past data. `carry` is what came before data in the same buffer (for the
  // backslashes right before a quote).
  static size_t ScanString(std::string_view data, size_t pos, std::string_view carry);

  ItemFn on_item_;
  const size_t max_item_bytes_;
  const size_t max_member_bytes_;
  State state_ = State::kStart;
  std::string key_;         // the member being read
  std::string member_;      // the value of a member other than items, while it arrives
  std::string item_;        // the item being read, when it spans several Feed calls
  size_t item_begin_ = 0;   // where the item being read began in the current chunk
  size_t members_ = 0;      // members of the top object seen so far
  int depth_ = 0;           // nesting inside the current item or captured member
  bool in_string_ = false;  // inside a string of the current item or captured member
  bool scalar_ = false;     // the captured member is a scalar (ends at , or })
  std::string resource_version_;
  std::string continue_token_;
  std::string kind_;
  size_t items_ = 0;
  size_t bytes_ = 0;
};

}  // namespace nodegate::kube
