#pragma once
// -o, --output of every `nodegate` command that prints a report: text for people (the default),
// json and yaml for programs. The JSON and YAML documents hold the same value; its field names
// follow one convention across commands (the man page's OUTPUT section): lowerCamelCase, a pod
// as "NAMESPACE/NAME" under "pod", a node's name under "node", the verdict as a boolean
// ("admitted", "valid", "fits").

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace nodegate::cli {

enum class Format { kText, kJson, kYaml };

// AddOutputFlag: -o,--output text|json|yaml into `format`. `text_name` is the word for the
// text form a command has always taken ("table" for `nodegate ipam`); "text" is always taken
// too.
CLI::Option* AddOutputFlag(CLI::App& app, Format& format, const std::string& text_name = "text");

// Render: `value` as indented JSON or block YAML, ending in a newline (kText: JSON too).
std::string Render(const nlohmann::json& value, Format format);
std::string Render(const nlohmann::ordered_json& value, Format format);

// ToYaml: a JSON value as block YAML (strings double-quoted in JSON's escapes, which YAML
// shares), so any YAML reader reads back the same value.
std::string ToYaml(const nlohmann::json& value);
std::string ToYaml(const nlohmann::ordered_json& value);

}  // namespace nodegate::cli
