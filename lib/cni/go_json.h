#pragma once
// JSON read the way the reference reads it: Go's encoding/json decoding into structs. Every
// parser of runtime input (plugin stdin, runtimeConfig and its capabilities, prevResult, ipam,
// args, the libcni cache, plugin results, conflists) goes through here, so that the keys
// containerd sends with Go field names ("HostPort", "IngressRate") mean what they mean to the
// reference. The rule, for an object that the reference decodes into a struct:
//
//   - a key equal to a field's name selects that field; otherwise a key equal to it ignoring
//     case does (Go's folding: ASCII letters, plus U+212A KELVIN SIGN for k and U+017F LONG S
//     for s); the value is stored under the field's own spelling, so parsers look up one name;
//   - keys that name no field are kept as they are (and ignored by the parsers);
//   - of several keys selecting one field, the last one in the document wins; a repeated
//     struct or map field merges into what an earlier key gave, and a repeated slice is
//     overwritten element by element, as Go decodes into the value it already holds;
//   - `null` leaves the field as it was (value fields) or unset (pointer, slice, map fields);
//   - objects the reference decodes into a map keep their keys exactly.
//
// Numbers are stored as parsed: an integer field given 8080.0 or 1e3 sees a float, which the
// field's parser refuses (Go refuses it). A number beyond a double's range, and nesting deeper
// than Go's 10,000 levels, are decoding errors.
//
//   static const gojson::Shape kShape = gojson::Struct({{"hostPort"}, {"protocol"}});
//   NG_ASSIGN_OR_RETURN(Json conf, gojson::Decode(text, kShape));
//   conf.find("hostPort");  // also when the input said "HostPort"
//
// Data that went through a Go map before the reference decoded it into a struct (prevResult,
// the cache's result) is folded in the map's key order, not the document's: Refold().

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::cni {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

}  // namespace nodegate::cni

namespace nodegate::cni::gojson {

// Go's nesting limit (encoding/json maxNestingDepth).
inline constexpr size_t kMaxDepth = 10000;

struct Field;

// What the reference decodes a JSON value into.
struct Shape {
  enum class Kind {
    kAny,     // a scalar, json.RawMessage or interface{}: kept as it is
    kStruct,  // a struct: keys matched to `fields` as Go matches them
    kList,    // a slice of `element`
    kMap,     // a map[string]`element`: keys exact
  };
  Kind kind = Kind::kAny;
  std::vector<Field> fields;   // kStruct
  std::vector<Shape> element;  // kList, kMap: exactly one

  // The field `key` selects: an exact name first, then one equal ignoring case; or nullptr.
  const Field* FindField(std::string_view key) const;
  // The element's shape (kList, kMap), else kAny.
  const Shape& Element() const;
};

// How a JSON null for a field decodes.
enum class Null {
  kReset,   // pointer, slice, map, interface: the field becomes unset
  kKeep,    // string, number, bool, struct value: no change
  kAsZero,  // as kKeep, but the key counts as given: stored as null when the field is unset
            // (a field of an embedded struct pointer, which Go allocates on seeing the key)
};

struct Field {
  std::string name;  // the reference's JSON name (its `json:` tag, or the Go field name)
  Shape shape;
  Null null = Null::kReset;
};

// Shape builders, so a parser can declare the reference's structs as data.
Shape Any();
Shape Struct(std::vector<Field> fields);
Shape ListOf(Shape element);
Shape MapOf(Shape element);
// A struct that embeds others (Go's anonymous fields): their fields, then `own`.
Shape Embed(const std::vector<Shape>& embedded, std::vector<Field> own);

// Go's case-insensitive key rule: does `key` select a field named `name` (ASCII)?
bool KeyMatchesField(std::string_view key, std::string_view name);

// Parses `text` as JSON shaped like `shape`. Errors: code 6 with `what` and the reason.
Result<Json> Decode(std::string_view text, const Shape& shape,
                    std::string_view what = "error decoding JSON");

// Re-keys an already parsed value as if Go had marshalled it from maps (keys in byte order)
// and decoded it into `shape`.
Json Refold(Json value, const Shape& shape);

}  // namespace nodegate::cni::gojson
