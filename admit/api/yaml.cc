#include "admit/api/yaml.h"

#include <yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace nodegate::admit {
namespace {

using nlohmann::json;

// Refusal: why the document is refused; thrown inside this file only.
struct Refusal {
  std::string message;
};

std::string LineOf(const yaml_mark_t& mark) { return "line " + std::to_string(mark.line + 1); }

std::string LineAndColumnOf(const yaml_mark_t& mark) {
  return LineOf(mark) + ", column " + std::to_string(mark.column + 1);
}

// Owns a libyaml parser reading `text` (which must outlive it).
class YamlParser {
 public:
  explicit YamlParser(std::string_view text) {
    if (yaml_parser_initialize(&parser_) == 0) {
      throw Refusal{"out of memory"};
    }
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlParser() { yaml_parser_delete(&parser_); }
  YamlParser(const YamlParser&) = delete;
  YamlParser& operator=(const YamlParser&) = delete;

  yaml_parser_t* get() { return &parser_; }

 private:
  yaml_parser_t parser_{};
};

// Owns one parsed event.
class YamlEvent {
 public:
  YamlEvent() = default;
  ~YamlEvent() { yaml_event_delete(&event_); }
  YamlEvent(const YamlEvent&) = delete;
  YamlEvent& operator=(const YamlEvent&) = delete;

  yaml_event_t* get() { return &event_; }
  const yaml_event_t& operator*() const { return event_; }

 private:
  yaml_event_t event_{};
};

// The parser's error, with its line (reader errors have only a byte offset: the line is counted).
std::string ParserError(const yaml_parser_t& parser, std::string_view text) {
  if (parser.error == YAML_MEMORY_ERROR) {
    return "out of memory";
  }
  const std::string problem = parser.problem != nullptr ? parser.problem : "unknown error";
  if (parser.error == YAML_READER_ERROR) {
    const size_t offset = std::min(parser.problem_offset, text.size());
    const auto line = std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n');
    return "invalid YAML: line " + std::to_string(line + 1) + " (byte " + std::to_string(offset) +
           "): " + problem;
  }
  std::string message = "invalid YAML: " + LineAndColumnOf(parser.problem_mark) + ": " + problem;
  if (parser.context != nullptr) {
    message += " (" + std::string(parser.context) + " at " + LineOf(parser.context_mark) + ")";
  }
  return message;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsYamlStyleFloat(std::string_view s) {
  size_t p = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  const auto digits = [&] {
    const size_t start = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    return p - start;
  };
  size_t mantissa_digits = digits();
  if (p < s.size() && s[p] == '.') {
    ++p;
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return false;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    if (p < s.size() && (s[p] == '-' || s[p] == '+')) ++p;
    if (digits() == 0) return false;
  }
  return p == s.size();
}

// An integer as Go's strconv.ParseInt(s, 0, 64) reads it, then ParseUint for what is past
// int64: an optional sign, then 0x, 0o, 0b or a leading 0 (octal) choose the base.
std::optional<json> ParseGoInteger(std::string_view s) {
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && std::strchr("xXoObB", s[1]) != nullptr) {
    base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'b' || s[1] == 'B') ? 2 : 8;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  for (char c : s) {
    const int digit = (c >= '0' && c <= '9')   ? c - '0'
                      : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                      : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                               : 99;
    if (digit >= base) return std::nullopt;
    const auto b = static_cast<uint64_t>(base);
    if (magnitude > (UINT64_MAX - static_cast<uint64_t>(digit)) / b) return std::nullopt;
    magnitude = magnitude * b + static_cast<uint64_t>(digit);
  }
  constexpr auto kInt64Max = static_cast<uint64_t>(INT64_MAX);
  if (!negative) {
    if (magnitude <= kInt64Max) return json(static_cast<int64_t>(magnitude));
    return json(magnitude);  // ParseUint's range, kept exact
  }
  if (magnitude <= kInt64Max) return json(-static_cast<int64_t>(magnitude));
  if (magnitude == kInt64Max + 1) return json(INT64_MIN);
  return std::nullopt;
}

// A plain scalar resolved as go-yaml v2 resolves it, which is what the kubelet's decoder
// (sigs.k8s.io/yaml) gets: YAML 1.1 booleans (yes/no/on/off/y/n), '_' ignored in numbers,
// Go's integer prefixes (a leading 0 is octal), then floats; anything else is a string.
// Not resolved here (they stay strings): .inf and .nan (no JSON form; the kubelet fails on
// them) and timestamps.
json ResolvePlainScalar(const std::string& s) {
  static const std::set<std::string, std::less<>> kNull = {"", "~", "null", "Null", "NULL"};
  static const std::set<std::string, std::less<>> kTrue = {
      "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static const std::set<std::string, std::less<>> kFalse = {
      "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  if (kNull.contains(s)) return nullptr;
  if (kTrue.contains(s)) return true;
  if (kFalse.contains(s)) return false;
  if (std::strchr("0123456789+-.", s[0]) == nullptr) return s;
  std::string plain = s;
  std::erase(plain, '_');
  if (auto integer = ParseGoInteger(plain)) return *integer;
  if (IsYamlStyleFloat(plain)) return std::strtod(plain.c_str(), nullptr);
  return s;
}

std::string AnchorOf(const yaml_char_t* anchor) {
  return anchor != nullptr ? reinterpret_cast<const char*>(anchor) : "";
}

// Builds JSON values from the parser's events. Every value made (aliases included, at the size
// they expand to) is charged to a budget proportional to the text, which bounds a billion-laughs
// document; nesting is bounded by kMaxDocumentDepth.
class TreeBuilder {
 public:
  explicit TreeBuilder(size_t budget) : budget_(budget) {}

  // Consumes one event; throws Refusal.
  void Add(const yaml_event_t& event) {
    switch (event.type) {
      case YAML_SCALAR_EVENT:
        AddScalar(event);
        break;
      case YAML_ALIAS_EVENT:
        AddAlias(event);
        break;
      case YAML_SEQUENCE_START_EVENT:
        Open(json::array(), event.data.sequence_start.anchor, event.start_mark);
        break;
      case YAML_MAPPING_START_EVENT:
        Open(json::object(), event.data.mapping_start.anchor, event.start_mark);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        Close();
        break;
      case YAML_DOCUMENT_END_EVENT:
        documents_.push_back(root_.value_or(nullptr));
        root_.reset();
        anchors_.clear();  // anchors are local to their document
        break;
      default:
        break;
    }
  }

  std::vector<json> TakeDocuments() { return std::move(documents_); }

 private:
  struct Frame {
    json value;
    std::string anchor;
    size_t spent_at_open = 0;
    std::optional<std::string> pending_key;  // a mapping's key waiting for its value
  };
  struct Anchored {
    json value;
    size_t cost = 0;
  };

  void Charge(size_t cost) {
    if (cost > budget_) {
      throw Refusal{"document expands to too many values (YAML aliases expanding out of bounds?)"};
    }
    budget_ -= cost;
    spent_ += cost;
  }

  void AddScalar(const yaml_event_t& event) {
    const auto& scalar = event.data.scalar;
    std::string text(reinterpret_cast<const char*>(scalar.value), scalar.length);
    Charge(1 + text.size() / 64);
    if (IsKeyPosition()) {
      SetKey(std::move(text), event.start_mark);
      return;
    }
    const std::string tag = scalar.tag != nullptr ? reinterpret_cast<const char*>(scalar.tag) : "";
    const bool string_only =
        scalar.style != YAML_PLAIN_SCALAR_STYLE || tag == "!" || tag == "tag:yaml.org,2002:str";
    json value = string_only ? json(std::move(text)) : ResolvePlainScalar(text);
    if (scalar.anchor != nullptr) {
      anchors_[AnchorOf(scalar.anchor)] = Anchored{value, 1};
    }
    Place(std::move(value));
  }

  void AddAlias(const yaml_event_t& event) {
    const std::string name = AnchorOf(event.data.alias.anchor);
    const auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      throw Refusal{LineOf(event.start_mark) + ": unknown anchor \"" + name + "\""};
    }
    Charge(it->second.cost);
    const json& value = it->second.value;
    if (IsKeyPosition()) {
      if (value.is_object() || value.is_array()) {
        throw Refusal{LineOf(event.start_mark) + ": mapping keys must be strings"};
      }
      SetKey(value.is_string() ? value.get<std::string>() : value.dump(), event.start_mark);
      return;
    }
    Place(json(value));
  }

  void Open(json empty, const yaml_char_t* anchor, const yaml_mark_t& mark) {
    if (IsKeyPosition()) {
      throw Refusal{LineOf(mark) + ": mapping keys must be strings"};
    }
    if (stack_.size() >= static_cast<size_t>(kMaxDocumentDepth)) {
      throw Refusal{"YAML nesting deeper than " + std::to_string(kMaxDocumentDepth) + " levels (" +
                    LineOf(mark) + ")"};
    }
    Charge(1);
    stack_.push_back(Frame{std::move(empty), AnchorOf(anchor), spent_, std::nullopt});
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (!frame.anchor.empty()) {
      anchors_[frame.anchor] = Anchored{frame.value, spent_ - frame.spent_at_open};
    }
    Place(std::move(frame.value));
  }

  bool IsKeyPosition() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().pending_key;
  }

  // The kubelet's decoder (sigs.k8s.io/yaml, strict) refuses a key given twice in one mapping,
  // where a plain YAML loader would keep the last value.
  void SetKey(std::string key, const yaml_mark_t& mark) {
    Frame& frame = stack_.back();
    if (frame.value.contains(key)) {
      throw Refusal{LineOf(mark) + ": key \"" + key +
                    "\" already set in this mapping (duplicate keys are refused, as the kubelet "
                    "refuses them)"};
    }
    frame.pending_key = std::move(key);
  }

  void Place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
      return;
    }
    parent.value[*parent.pending_key] = std::move(value);
    parent.pending_key.reset();
  }

  size_t budget_;
  size_t spent_ = 0;
  std::vector<Frame> stack_;
  std::optional<json> root_;
  std::map<std::string, Anchored> anchors_;
  std::vector<json> documents_;
};

}  // namespace

Result<std::vector<json>> YamlDocumentsToJson(std::string_view text) {
  try {
    YamlParser parser(text);
    TreeBuilder builder(2 * text.size() + 10000);
    for (;;) {
      YamlEvent event;
      if (yaml_parser_parse(parser.get(), event.get()) == 0) {
        return Error(kErrDecode, ParserError(*parser.get(), text));
      }
      if ((*event).type == YAML_STREAM_END_EVENT) {
        break;
      }
      builder.Add(*event);
    }
    return builder.TakeDocuments();
  } catch (const Refusal& refusal) {
    return Error(kErrDecode, refusal.message);
  } catch (const std::exception& e) {
    return Error(kErrDecode, std::string("invalid YAML: ") + e.what());
  }
}

}  // namespace nodegate::admit
