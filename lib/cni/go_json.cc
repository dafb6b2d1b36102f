#include "lib/cni/go_json.h"

#include <cmath>
#include <utility>

namespace nodegate::cni::gojson {
namespace {

const Shape& AnyShape() {
  static const Shape shape;
  return shape;
}

bool AsciiFoldEqual(char a, char b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  return lower(a) == lower(b);
}

// Length of the valid UTF-8 sequence at text[i] (1-4), or 0 when the bytes there are not one
// (overlong forms, surrogates and code points past U+10FFFF are invalid, as in Go).
size_t ValidUtf8Length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

// Go decodes invalid UTF-8 inside strings as U+FFFD, byte by byte; nlohmann refuses it. Outside
// strings such bytes are a syntax error either way, so replacing them everywhere is Go's rule.
std::string_view ReplaceInvalidUtf8(std::string_view text, std::string& storage) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = ValidUtf8Length(text, i);
    if (len == 0) break;
    i += len;
  }
  if (i == text.size()) return text;
  storage.assign(text.substr(0, i));
  while (i < text.size()) {
    const size_t len = ValidUtf8Length(text, i);
    if (len == 0) {
      storage += "\xEF\xBF\xBD";
      ++i;
    } else {
      storage.append(text.substr(i, len));
      i += len;
    }
  }
  return storage;
}

// Builds the document, placing each value where the reference's decoder would. Go decodes a
// repeated struct, map or slice field into the value it already holds: struct and map fields
// merge, slices are overwritten element by element and then cut to the new length.
class ShapedBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit ShapedBuilder(const Shape& shape) : root_shape_(shape) {}

  Json TakeRoot() { return std::move(root_); }
  const std::string& error() const { return error_; }

  bool null() override {
    Json* existing = Existing();
    if (InObject()) {
      if (slot_.field) {
        // Go: pointers, slices and maps become nil; plain values stay as they were.
        if (slot_.null == Null::kReset) {
          stack_.back().node->erase(slot_.name);
        } else if (slot_.null == Null::kAsZero && existing == nullptr) {
          Put(Json(nullptr));
        }
        return true;
      }
    } else if (existing != nullptr && existing->is_object() &&
               NextShape().kind == Shape::Kind::kStruct) {
      ++stack_.back().next;  // a struct element decoded from null keeps its value
      return true;
    }
    Put(Json(nullptr));
    return true;
  }
  bool boolean(bool value) override { return Scalar(Json(value)); }
  bool number_integer(number_integer_t value) override { return Scalar(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Scalar(Json(value)); }
  bool number_float(number_float_t value, const string_t& text) override {
    if (!std::isfinite(value)) {
      return Fail("number " + text + " is out of range");
    }
    return Scalar(Json(value));
  }
  bool string(string_t& value) override { return Scalar(Json(std::move(value))); }
  bool binary(binary_t& /*value*/) override { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t /*size*/) override {
    if (stack_.size() >= kMaxDepth) return Fail("exceeded max depth");
    const Shape& shape = NextShape();
    const bool merges = shape.kind == Shape::Kind::kStruct || shape.kind == Shape::Kind::kMap;
    Json* node = Reusable(merges, [](const Json& j) { return j.is_object(); });
    if (node == nullptr) node = Put(Json::object());
    stack_.push_back({node, &shape});
    return true;
  }
  bool key(string_t& key) override {
    const Shape& shape = *stack_.back().shape;
    slot_ = Slot{key, &AnyShape(), Null::kReset, false};
    if (shape.kind == Shape::Kind::kStruct) {
      if (const Field* field = shape.FindField(key)) {
        slot_ = Slot{field->name, &field->shape, field->null, true};
      }
    } else if (shape.kind == Shape::Kind::kMap) {
      slot_.shape = &shape.Element();
    }
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) override {
    if (stack_.size() >= kMaxDepth) return Fail("exceeded max depth");
    const Shape& shape = NextShape();
    Json* node =
        Reusable(shape.kind == Shape::Kind::kList, [](const Json& j) { return j.is_array(); });
    if (node == nullptr) node = Put(Json::array());
    stack_.push_back({node, &shape});
    return true;
  }
  bool end_array() override {
    Frame& top = stack_.back();
    if (top.next < top.node->size()) {  // a shorter repeat cuts the slice
      top.node->erase(top.node->begin() + static_cast<std::ptrdiff_t>(top.next), top.node->end());
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406) {  // out_of_range.406: a number past a double's range
      return Fail("number " + last_token + " is out of range");
    }
    if (error_.empty()) {
      // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse".
      std::string what = ex.what();
      const auto pos = what.find("parse error");
      error_ = pos == std::string::npos ? what : what.substr(pos);
    }
    return false;
  }

 private:
  struct Frame {
    Json* node;
    const Shape* shape;
    size_t next = 0;  // arrays: index of the next element
  };
  // Where the next value of the current object goes.
  struct Slot {
    std::string name;
    const Shape* shape;
    Null null;
    bool field;  // a struct field (not a map key or unknown key)
  };

  bool Fail(std::string reason) {
    if (error_.empty()) error_ = std::move(reason);
    return false;
  }

  bool InObject() const { return !stack_.empty() && stack_.back().node->is_object(); }

  // The shape of the value about to be read.
  const Shape& NextShape() const {
    if (stack_.empty()) return root_shape_;
    const Frame& top = stack_.back();
    if (top.node->is_array()) return top.shape->Element();
    return *slot_.shape;
  }

  // The value already at the next slot (a field seen before, or a slice element being
  // overwritten in place), or nullptr.
  Json* Existing() {
    if (stack_.empty()) return nullptr;
    Frame& top = stack_.back();
    if (top.node->is_array()) {
      return top.next < top.node->size() ? &(*top.node)[top.next] : nullptr;
    }
    auto it = top.node->find(slot_.name);
    return it == top.node->end() ? nullptr : &*it;
  }

  // The existing value to decode into, when Go would reuse it; it then takes the slot.
  template <typename Kind>
  Json* Reusable(bool shape_reuses, Kind kind) {
    if (!shape_reuses || (InObject() && !slot_.field)) return nullptr;
    Json* existing = Existing();
    if (existing == nullptr || !kind(*existing)) return nullptr;
    if (!InObject() && !stack_.empty()) ++stack_.back().next;
    return existing;
  }

  bool Scalar(Json value) {
    Put(std::move(value));
    return true;
  }

  Json* Put(Json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.node->is_array()) {
      if (top.next < top.node->size()) {
        Json& slot = (*top.node)[top.next++];
        slot = std::move(value);
        return &slot;
      }
      top.node->push_back(std::move(value));
      top.next = top.node->size();
      return &top.node->back();
    }
    Json& slot = (*top.node)[slot_.name];
    slot = std::move(value);
    return &slot;
  }

  const Shape& root_shape_;
  Json root_;
  std::vector<Frame> stack_;
  Slot slot_{"", &AnyShape(), Null::kReset, false};
  std::string error_;
};

// Refold: `value` came from a Go map, so its keys are visited in byte order (json.Marshal
// sorts a map's keys) and its numbers went through float64 (an integral 2.0 is written as 2).
// Each value is decoded into `target` as Go decodes into what a field already holds.
void DecodeInto(Json& target, Json value, const Shape& shape);

void RefoldStruct(Json& target, Json value, const Shape& shape) {
  for (auto& [key, item] : value.items()) {
    const Field* field = shape.FindField(key);
    if (field == nullptr) {
      target[key] = std::move(item);
      continue;
    }
    auto existing = target.find(field->name);
    if (item.is_null()) {
      if (field->null == Null::kReset) {
        target.erase(field->name);
      } else if (field->null == Null::kAsZero && existing == target.end()) {
        target[field->name] = nullptr;
      }
      continue;
    }
    if (existing == target.end()) {
      DecodeInto(target[field->name], std::move(item), field->shape);
    } else {
      DecodeInto(*existing, std::move(item), field->shape);
    }
  }
}

void DecodeInto(Json& target, Json value, const Shape& shape) {
  switch (shape.kind) {
    case Shape::Kind::kAny:
      if (value.is_number_float()) {
        const double d = value.get<double>();
        // A whole number in int64's range (checked first: the cast is undefined outside it).
        if (std::fabs(d) < 9.2e18 && static_cast<double>(static_cast<int64_t>(d)) == d) {
          value = static_cast<int64_t>(d);
        }
      }
      target = std::move(value);
      return;
    case Shape::Kind::kStruct:
      if (!value.is_object()) break;
      if (!target.is_object()) target = Json::object();
      RefoldStruct(target, std::move(value), shape);
      return;
    case Shape::Kind::kMap:
      if (!value.is_object()) break;
      if (!target.is_object()) target = Json::object();
      for (auto& [key, item] : value.items()) {
        Json fresh;
        DecodeInto(fresh, std::move(item), shape.Element());
        target[key] = std::move(fresh);
      }
      return;
    case Shape::Kind::kList:
      if (!value.is_array()) break;
      if (!target.is_array()) target = Json::array();
      for (size_t i = 0; i < value.size(); ++i) {
        if (i < target.size()) {
          DecodeInto(target[i], std::move(value[i]), shape.Element());
        } else {
          Json fresh;
          DecodeInto(fresh, std::move(value[i]), shape.Element());
          target.push_back(std::move(fresh));
        }
      }
      target.erase(target.begin() + static_cast<std::ptrdiff_t>(value.size()), target.end());
      return;
  }
  target = std::move(value);  // a kind mismatch: the field's parser reports it
}

}  // namespace

const Field* Shape::FindField(std::string_view key) const {
  for (const Field& field : fields) {
    if (field.name == key) return &field;
  }
  for (const Field& field : fields) {
    if (KeyMatchesField(key, field.name)) return &field;
  }
  return nullptr;
}

const Shape& Shape::Element() const { return element.empty() ? AnyShape() : element.front(); }

Shape Any() { return Shape(); }

Shape Struct(std::vector<Field> fields) {
  Shape shape;
  shape.kind = Shape::Kind::kStruct;
  shape.fields = std::move(fields);
  return shape;
}

Shape ListOf(Shape element) {
  Shape shape;
  shape.kind = Shape::Kind::kList;
  shape.element.push_back(std::move(element));
  return shape;
}

Shape MapOf(Shape element) {
  Shape shape;
  shape.kind = Shape::Kind::kMap;
  shape.element.push_back(std::move(element));
  return shape;
}

Shape Embed(const std::vector<Shape>& embedded, std::vector<Field> own) {
  std::vector<Field> fields;
  for (const Shape& shape : embedded) {
    fields.insert(fields.end(), shape.fields.begin(), shape.fields.end());
  }
  // An outer field hides an embedded one of the same name (Go's shallower-field rule).
  for (Field& field : own) {
    std::erase_if(fields, [&](const Field& f) { return f.name == field.name; });
    fields.push_back(std::move(field));
  }
  return Struct(std::move(fields));
}

bool KeyMatchesField(std::string_view key, std::string_view name) {
  size_t k = 0;
  for (const char want : name) {
    if (k >= key.size()) return false;
    const char c = key[k];
    if (static_cast<unsigned char>(c) < 0x80) {
      if (!AsciiFoldEqual(c, want)) return false;
      ++k;
      continue;
    }
    // The only non-ASCII runes that fold onto ASCII letters: U+017F (s) and U+212A (k).
    const std::string_view rest = key.substr(k);
    if (rest.starts_with("\xC5\xBF") && AsciiFoldEqual(want, 's')) {
      k += 2;
    } else if (rest.starts_with("\xE2\x84\xAA") && AsciiFoldEqual(want, 'k')) {
      k += 3;
    } else {
      return false;
    }
  }
  return k == key.size();
}

Result<Json> Decode(std::string_view text, const Shape& shape, std::string_view what) {
  std::string storage;
  const std::string_view valid = ReplaceInvalidUtf8(text, storage);
  ShapedBuilder builder(shape);
  const bool ok = Json::sax_parse(valid.begin(), valid.end(), &builder);
  if (!ok) {
    const std::string reason = builder.error().empty() ? "invalid JSON" : builder.error();
    return Error(kErrDecode, std::string(what) + ": " + reason);
  }
  return builder.TakeRoot();
}

Json Refold(Json value, const Shape& shape) {
  Json out;
  DecodeInto(out, std::move(value), shape);
  return out;
}

}  // namespace nodegate::cni::gojson
