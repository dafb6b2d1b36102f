#include "lib/json/field.h"

#include <limits>

namespace nodegate::json_field {
namespace {

// The member to type-check, or nullptr when it is not given.
const Json* Member(const Json& object, std::string_view key, NullIs null) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || (it->is_null() && null == NullIs::kNotGiven)) return nullptr;
  return &*it;
}

// Reads the member when `is_wanted` holds for it, with `take` turning it into the value.
template <typename T, typename IsWanted, typename Take>
FieldRead<T> Typed(const Json& object, std::string_view key, NullIs null, JsonType want,
                   IsWanted is_wanted, Take take) {
  const Json* member = Member(object, key, null);
  if (member == nullptr) return FieldRead<T>::NotGiven();
  if (!is_wanted(*member)) {
    return FieldRead<T>::Mismatched(FieldMismatch{.key = key, .want = want, .found = member});
  }
  return FieldRead<T>::Given(take(*member));
}

}  // namespace

std::string_view Described(JsonType type) {
  switch (type) {
    case JsonType::kString:
      return "a string";
    case JsonType::kBoolean:
      return "a boolean";
    case JsonType::kInteger:
      return "an integer";
    case JsonType::kObject:
      return "an object";
    case JsonType::kList:
      return "a list";
    case JsonType::kStringList:
      return "a list of strings";
  }
  return "a value";
}

bool IsGoInt(const Json& value) {
  // nlohmann counts a number above int64's range as unsigned: Go's int cannot hold it.
  if (value.is_number_unsigned()) {
    return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }
  return value.is_number_integer();
}

FieldRead<std::string> ReadString(const Json& object, std::string_view key, NullIs null) {
  return Typed<std::string>(
      object, key, null, JsonType::kString, [](const Json& j) { return j.is_string(); },
      [](const Json& j) { return j.get<std::string>(); });
}

FieldRead<bool> ReadBool(const Json& object, std::string_view key, NullIs null) {
  return Typed<bool>(
      object, key, null, JsonType::kBoolean, [](const Json& j) { return j.is_boolean(); },
      [](const Json& j) { return j.get<bool>(); });
}

FieldRead<int64_t> ReadInteger(const Json& object, std::string_view key, NullIs null) {
  return Typed<int64_t>(object, key, null, JsonType::kInteger, IsGoInt, [](const Json& j) {
    return j.is_number_unsigned() ? static_cast<int64_t>(j.get<uint64_t>()) : j.get<int64_t>();
  });
}

FieldRead<const Json*> ReadObject(const Json& object, std::string_view key, NullIs null) {
  return Typed<const Json*>(
      object, key, null, JsonType::kObject, [](const Json& j) { return j.is_object(); },
      [](const Json& j) { return &j; });
}

FieldRead<const Json*> ReadList(const Json& object, std::string_view key, NullIs null) {
  return Typed<const Json*>(
      object, key, null, JsonType::kList, [](const Json& j) { return j.is_array(); },
      [](const Json& j) { return &j; });
}

FieldRead<std::vector<std::string>> ReadStringList(const Json& object, std::string_view key,
                                                   NullIs null) {
  using Read = FieldRead<std::vector<std::string>>;
  const Json* member = Member(object, key, null);
  if (member == nullptr) return Read::NotGiven();
  if (!member->is_array()) {
    return Read::Mismatched({.key = key, .want = JsonType::kStringList, .found = member});
  }
  std::vector<std::string> out;
  out.reserve(member->size());
  for (size_t i = 0; i < member->size(); ++i) {
    const Json& item = (*member)[i];
    if (!item.is_string()) {
      return Read::Mismatched(
          {.key = key, .want = JsonType::kStringList, .found = &item, .index = i});
    }
    out.push_back(item.get<std::string>());
  }
  return Read::Given(std::move(out));
}

const Json* GivenField(const Json& object, std::string_view key) {
  return Member(object, key, NullIs::kNotGiven);
}

std::string StringOrEmpty(const Json& object, std::string_view key) {
  return ReadString(object, key).value_or("");
}

const Json* MemberAt(const Json& object, std::initializer_list<const char*> path) {
  const Json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string StringAt(const Json& object, std::initializer_list<const char*> path) {
  const Json* at = MemberAt(object, path);
  return at != nullptr && at->is_string() ? at->get<std::string>() : "";
}

}  // namespace nodegate::json_field
