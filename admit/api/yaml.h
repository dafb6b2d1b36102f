#pragma once
// YAML text to JSON values, the way the kubelet's decoder (sigs.k8s.io/yaml over go-yaml, a port
// of libyaml) reads a manifest: libyaml's parser, so the same grammar is accepted and refused
// (invalid UTF-8 and control characters included), and duplicate keys refused as the strict
// decoder refuses them. The parser is event-driven and the tree is built with an explicit
// stack, so every input ends in bounded time and memory: nesting, the values a document
// expands to through aliases, and the size of the text are all capped.

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::admit {

// Deepest nesting of mappings and sequences a document may have (JSON or YAML). Kubernetes
// objects are about a dozen levels deep.
inline constexpr int kMaxDocumentDepth = 64;

// YamlDocumentsToJson: each document of the stream, in order; an empty document is null.
// Plain scalars resolve like the YAML 1.2 core schema (null, booleans, integers, floats);
// quoted and block scalars, and an explicit !!str, stay strings. Errors name the line.
Result<std::vector<nlohmann::json>> YamlDocumentsToJson(std::string_view text);

}  // namespace nodegate::admit
