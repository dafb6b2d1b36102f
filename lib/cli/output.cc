#include "lib/cli/output.h"

#include <cctype>

namespace nodegate::cli {
namespace {

template <typename Json>
std::string Scalar(const Json& v) {
  return v.is_null() ? "null" : v.dump();  // JSON's escapes are YAML's double-quoted escapes
}

template <typename Json>
bool Inline(const Json& v) {
  return !v.is_structured() || v.empty();
}

template <typename Json>
std::string InlineValue(const Json& v) {
  return v.is_structured() ? std::string(v.is_object() ? "{}" : "[]") : Scalar(v);
}

// Key: plain when it is a name no YAML reader turns into something else, else double-quoted.
std::string Key(const std::string& key) {
  bool plain = !key.empty() && std::isalpha(static_cast<unsigned char>(key[0]));
  for (char c : key) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                      c == '.' || c == '/');
  }
  std::string lower;
  for (char c : key) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* word : {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}) {
    plain = plain && lower != word;
  }
  return plain ? key : nlohmann::json(key).dump();
}

template <typename Json>
void Yaml(std::string& out, const Json& v, int indent, bool in_list_item) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += (first && in_list_item ? "" : pad) + Key(key) + ":";
      first = false;
      if (Inline(value)) {
        out += " " + InlineValue(value) + "\n";
      } else {
        out += "\n";
        Yaml(out, value, indent + 2, false);
      }
    }
    return;
  }
  if (v.is_array()) {
    for (const Json& item : v) {
      out += pad + "- ";
      if (Inline(item)) {
        out += InlineValue(item) + "\n";
      } else if (item.is_object()) {
        Yaml(out, item, indent + 2, true);
      } else {
        out += "\n";
        Yaml(out, item, indent + 2, false);
      }
    }
    return;
  }
  out += pad + Scalar(v) + "\n";
}

template <typename Json>
std::string YamlOf(const Json& value) {
  if (Inline(value)) {
    return InlineValue(value) + "\n";
  }
  std::string out;
  Yaml(out, value, 0, false);
  return out;
}

template <typename Json>
std::string RenderOf(const Json& value, Format format) {
  if (format == Format::kYaml) {
    return YamlOf(value);
  }
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

CLI::Option* AddOutputFlag(CLI::App& app, Format& format, const std::string& text_name) {
  std::vector<std::string> names = {text_name, "json", "yaml"};
  if (text_name != "text") {
    names.push_back("text");
  }
  // A word checked against the set, then stored as a Format: --help shows the words
  // (TEXT:{text,json,yaml}), which the man page and the completions read too.
  return app
      .add_option_function<std::string>(
          "-o,--output",
          [&format](const std::string& word) {
            format = word == "json"   ? Format::kJson
                     : word == "yaml" ? Format::kYaml
                                      : Format::kText;
          },
          text_name + ", json or yaml")
      ->check(CLI::IsMember(names))
      ->default_str(text_name);
}

std::string Render(const nlohmann::json& value, Format format) { return RenderOf(value, format); }
std::string Render(const nlohmann::ordered_json& value, Format format) {
  return RenderOf(value, format);
}
std::string ToYaml(const nlohmann::json& value) { return YamlOf(value); }
std::string ToYaml(const nlohmann::ordered_json& value) { return YamlOf(value); }

}  // namespace nodegate::cli
