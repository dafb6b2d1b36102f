#pragma once
// One typed reader for a member of a JSON object, shared by every parser of the tree (plugin
// configs, results, conflists, the libcni cache, the admission checker's objects). A member
// reads as Go's encoding/json decodes a struct field: absent or null is "not given", a value of
// the type asked for is given, anything else is a mismatch. The reader never words an error:
// each parser turns a FieldMismatch into its own message and code, so its texts stay its own.
//
//   const auto must_be = [](const FieldMismatch& m) {
//     return Error(kErrInvalidConfig, "\"" + std::string(m.key) + "\" must be " + m.described());
//   };
//   NG_ASSIGN_OR_RETURN(bool snat, ReadBool(raw, "snat").GetOr(true, must_be));
//   NG_ASSIGN_OR_RETURN(std::optional<std::string> name, ReadString(raw, "backend").Get(must_be));
//
// Keys are looked up exactly. Parsers that decoded their input with gojson::Decode or Refold
// (lib/cni/go_json.h) find every spelling Go accepts under the field's own name already.

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::json_field {

using Json = nlohmann::json;

// The types a member can be asked for.
enum class JsonType {
  kString,
  kBoolean,
  kInteger,  // Go's int: a JSON integer that fits in int64 (8080.0 and 1e3 are not integers)
  kObject,
  kList,
  kStringList,
};

// "a string", "a boolean", "an integer", "an object", "a list", "a list of strings".
std::string_view Described(JsonType type);

// How a member that is null reads.
enum class NullIs {
  kNotGiven,  // Go decoding into a struct field: null leaves the field unset (the usual case)
  kMismatch,  // Go asserting the type of a map[string]interface{} value: null is of no type
};

// A member that is there but not of the type asked for.
struct FieldMismatch {
  std::string_view key;  // the caller's key (it must outlive the mismatch)
  JsonType want;
  // The member; for kStringList with a list, the first element that is not a string.
  const Json* found = nullptr;
  std::optional<size_t> index;  // kStringList: that element's position in the list

  std::string described() const { return std::string(Described(want)); }
};

// What reading one member gave: its value, "not given", or a mismatch.
template <typename T>
class [[nodiscard]] FieldRead {
 public:
  static FieldRead NotGiven() { return FieldRead(); }
  static FieldRead Given(T value) {
    FieldRead read;
    read.value_ = std::move(value);
    return read;
  }
  static FieldRead Mismatched(FieldMismatch mismatch) {
    FieldRead read;
    read.mismatch_ = mismatch;
    return read;
  }

  bool given() const { return value_.has_value(); }
  bool mismatched() const { return mismatch_.has_value(); }
  // Given or mismatched: the member is there (and not null, unless NullIs::kMismatch).
  bool present() const { return given() || mismatched(); }
  // The value; nullopt when not given or mismatched.
  const std::optional<T>& value() const { return value_; }
  T value_or(T fallback) const { return value_ ? *value_ : std::move(fallback); }
  const FieldMismatch& mismatch() const { return *mismatch_; }

  // The value (nullopt: not given), or the error `wording` makes of the mismatch.
  template <std::invocable<const FieldMismatch&> Wording>
  Result<std::optional<T>> Get(const Wording& wording) const {
    if (mismatch_) return Error(wording(*mismatch_));
    return value_;
  }
  // As Get, with `fallback` for a member not given.
  template <std::invocable<const FieldMismatch&> Wording>
  Result<T> GetOr(T fallback, const Wording& wording) const {
    if (mismatch_) return Error(wording(*mismatch_));
    return value_ ? *value_ : std::move(fallback);
  }

 private:
  FieldRead() = default;

  std::optional<T> value_;
  std::optional<FieldMismatch> mismatch_;
};

// Reads object[key]. A value that is not an object has no members: every key is not given.
FieldRead<std::string> ReadString(const Json& object, std::string_view key,
                                  NullIs null = NullIs::kNotGiven);
FieldRead<bool> ReadBool(const Json& object, std::string_view key, NullIs null = NullIs::kNotGiven);
FieldRead<int64_t> ReadInteger(const Json& object, std::string_view key,
                               NullIs null = NullIs::kNotGiven);
// The member itself (never nullptr when given).
FieldRead<const Json*> ReadObject(const Json& object, std::string_view key,
                                  NullIs null = NullIs::kNotGiven);
FieldRead<const Json*> ReadList(const Json& object, std::string_view key,
                                NullIs null = NullIs::kNotGiven);
FieldRead<std::vector<std::string>> ReadStringList(const Json& object, std::string_view key,
                                                   NullIs null = NullIs::kNotGiven);

// Is `value` an integer as Go's int reads one (JsonType::kInteger)?
bool IsGoInt(const Json& value);

// The member at `key` whatever its type, or nullptr when absent or null (or `object` is not an
// object).
const Json* GivenField(const Json& object, std::string_view key);

// The member at `key` when it is a string, else "": for data that may hold anything (a cache
// file, a manifest) where a field of another type counts as unset.
std::string StringOrEmpty(const Json& object, std::string_view key);

// The member at `path`, each key inside the one before ({"spec", "nodeName"}), whatever its type
// (null included); nullptr when a step is missing or not an object.
const Json* MemberAt(const Json& object, std::initializer_list<const char*> path);

// The member at `path` when it is a string, else "".
std::string StringAt(const Json& object, std::initializer_list<const char*> path);

}  // namespace nodegate::json_field
