#include "admit/api/load.h"

#include <unistd.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "admit/api/decode.h"
#include "lib/sys/io.h"

namespace nodegate::admit {
namespace {

using nlohmann::json;

constexpr size_t kMaxInputBytes = 256u << 20;
constexpr int kMaxDepth = 64;  // Kubernetes objects are a dozen levels deep

// DepthOk: JSON nesting within kMaxDepth, checked without recursion.
bool DepthOk(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) {
        return false;
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// YamlRefused: a YAML document the loader refuses (limits, duplicate keys); carries the reason.
struct YamlRefused {
  std::string message;
};

// YAML plain scalars resolve like the YAML 1.2 core schema (null, booleans, integers, floats);
// quoted scalars and explicit !!str stay strings.
json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return false;
  }
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i < s.size() && std::all_of(s.begin() + static_cast<long>(i), s.end(),
                                  [](char c) { return c >= '0' && c <= '9'; })) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end == s.c_str() + s.size()) {
      return static_cast<int64_t>(v);
    }
    // Past int64 but within uint64 (2^63): kept exact, as JSON input keeps it, so that range
    // errors show the number as written.
    errno = 0;
    unsigned long long u = std::strtoull(s.c_str(), &end, 10);
    if (s[0] != '-' && errno == 0 && end == s.c_str() + s.size()) {
      return static_cast<uint64_t>(u);
    }
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    const int base = s[1] == 'x' ? 16 : 8;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str() + 2, &end, base);
    if (errno == 0 && end == s.c_str() + s.size()) {
      return static_cast<int64_t>(v);
    }
  }
  // Floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  {
    size_t p = i;
    size_t int_digits = 0;
    size_t frac_digits = 0;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
      ++p;
      ++int_digits;
    }
    if (p < s.size() && s[p] == '.') {
      ++p;
      while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
        ++p;
        ++frac_digits;
      }
    }
    bool ok = int_digits + frac_digits > 0;
    if (ok && p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
      ++p;
      if (p < s.size() && (s[p] == '-' || s[p] == '+')) {
        ++p;
      }
      size_t exp_digits = 0;
      while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
        ++p;
        ++exp_digits;
      }
      ok = exp_digits > 0;
    }
    if (ok && p == s.size()) {
      return std::strtod(s.c_str(), nullptr);
    }
  }
  return s;
}

class YamlToJson {
 public:
  explicit YamlToJson(size_t budget) : budget_(budget) {}

  json Convert(const YAML::Node& node, int depth) {
    if (depth > kMaxDepth) {
      throw YamlRefused{"nesting deeper than " + std::to_string(kMaxDepth) + " levels"};
    }
    if (budget_ == 0) {
      throw YamlRefused{
          "document expands to too many values (YAML aliases expanding out of bounds?)"};
    }
    --budget_;
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar: {
        const std::string& tag = node.Tag();
        const std::string& text = node.Scalar();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") {
          budget_ -= std::min(budget_, text.size() / 64);
          return text;
        }
        if (tag == "?" || tag.empty()) {
          return ResolvePlainScalar(text);
        }
        return ResolvePlainScalar(text);
      }
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : node) {
          out.push_back(Convert(item, depth + 1));
        }
        return out;
      }
      case YAML::NodeType::Map:
        return ConvertMap(node, depth);
    }
    return nullptr;
  }

 private:
  // The kubelet's decoder (sigs.k8s.io/yaml, strict) refuses a key given twice in one mapping,
  // where a plain YAML loader would keep the last value.
  json ConvertMap(const YAML::Node& node, int depth) {
    json out = json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        throw YamlRefused{"mapping keys must be strings"};
      }
      const std::string& key = kv.first.Scalar();
      if (out.contains(key)) {
        throw YamlRefused{"line " + std::to_string(kv.first.Mark().line + 1) + ": key \"" + key +
                          "\" already set in this mapping (duplicate keys are refused, as the "
                          "kubelet refuses them)"};
      }
      out[key] = Convert(kv.second, depth + 1);
    }
    return out;
  }

  size_t budget_;
};

// yaml-cpp 0.7 never returns from LoadAll when a line in block context starts with ',' (a
// flow entry outside any flow collection: invalid YAML, since ',' cannot start a plain scalar;
// found by fuzzing). Such a line is refused before yaml-cpp sees the text. The scan follows
// only what decides "block context": flow brackets, quotes, comments and block scalars.
class StrayFlowEntryScan {
 public:
  // The 1-based line of the first stray ',', or 0.
  int Run(std::string_view text) {
    int number = 0;
    for (size_t start = 0; start <= text.size();) {
      const size_t end = std::min(text.find('\n', start), text.size());
      ++number;
      if (StartsWithStrayComma(text.substr(start, end - start))) return number;
      start = end + 1;
    }
    return 0;
  }

 private:
  bool StartsWithStrayComma(std::string_view line) {
    const size_t indent = std::min(line.find_first_not_of(' '), line.size());
    if (block_indent_ >= 0) {
      if (indent == line.size() || static_cast<int>(indent) > block_indent_) return false;
      block_indent_ = -1;  // the block scalar ended
    }
    std::string_view rest = line.substr(indent);
    if (rest.substr(0, 4) == "--- ") rest = rest.substr(4);
    if (depth_ == 0 && quote_ == 0 && !rest.empty() && rest.front() == ',') return true;
    Scan(line, static_cast<int>(indent));
    return false;
  }

  void Scan(std::string_view line, int indent) {
    char previous = ' ';
    for (size_t i = 0; i < line.size(); previous = line[i], ++i) {
      const char c = line[i];
      if (quote_ != 0) {
        if (c == '\\' && quote_ == '"') {
          ++i;
        } else if (c == quote_) {
          quote_ = 0;
        }
      } else if ((c == '"' || c == '\'') && IsNodeStart(previous)) {
        quote_ = c;
      } else if (c == '#' && previous == ' ') {
        return;
      } else if (c == '[' || c == '{') {
        ++depth_;
      } else if ((c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      } else if ((c == '|' || c == '>') && depth_ == 0 && IsNodeStart(previous)) {
        block_indent_ = indent;  // the following more-indented lines are its content
        return;
      }
    }
  }

  static bool IsNodeStart(char previous) {
    return previous == ' ' || previous == '[' || previous == '{' || previous == ',' ||
           previous == ':' || previous == '-';
  }

  int depth_ = 0;
  char quote_ = 0;
  int block_indent_ = -1;
};

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      continue;
    }
    return c == '{' || c == '[';
  }
  return false;
}

bool IsBlank(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

bool IsWorkloadKind(const std::string& kind) {
  return kind == "DaemonSet" || kind == "Deployment" || kind == "ReplicaSet" ||
         kind == "StatefulSet" || kind == "Job" || kind == "ReplicationController";
}

VoidResult CollectPods(const json& value, const std::string& where, bool allow_workloads,
                       bool inside_list, std::vector<Pod>& out) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      auto r =
          CollectPods(value[i], where + "[" + std::to_string(i) + "]", allow_workloads, true, out);
      if (!r.ok()) {
        return r;
      }
    }
    return Ok{};
  }
  if (!value.is_object()) {
    return Error{where + ": expected an object, got " +
                 std::string(value.is_string() ? "a string" : "a scalar")};
  }
  std::string kind;
  if (auto it = value.find("kind"); it != value.end() && !it->is_null()) {
    if (!it->is_string()) {
      return Error{where + ": kind: expected string"};
    }
    kind = it->get<std::string>();
  }
  if (kind == "PodList" || kind == "List") {
    auto items = value.find("items");
    if (items == value.end() || items->is_null()) {
      return Ok{};  // an empty list
    }
    if (!items->is_array()) {
      return Error{where + ": items: expected list"};
    }
    for (size_t i = 0; i < items->size(); ++i) {
      const json& item = (*items)[i];
      const std::string item_where = where + ": items[" + std::to_string(i) + "]";
      if (kind == "List" && item.is_object()) {
        auto k = item.find("kind");
        if (k != item.end() && k->is_string() && k->get<std::string>() != "Pod" &&
            !(allow_workloads && IsWorkloadKind(k->get<std::string>()))) {
          continue;  // a List may mix kinds (kubectl get all); only pods are on the node
        }
      }
      auto r = CollectPods(item, item_where, allow_workloads, true, out);
      if (!r.ok()) {
        return r;
      }
    }
    return Ok{};
  }
  if (kind.empty() || kind == "Pod") {
    auto pod = DecodePod(value, where);
    if (!pod.ok()) {
      return pod.error();
    }
    out.push_back(std::move(pod).value());
    return Ok{};
  }
  if (allow_workloads && IsWorkloadKind(kind)) {
    auto pod = DecodePodTemplate(value, where);
    if (!pod.ok()) {
      return pod.error();
    }
    out.push_back(std::move(pod).value());
    return Ok{};
  }
  (void)inside_list;
  return Error{where + ": kind: unsupported kind \"" + kind + "\" (want Pod, PodList or List" +
               (allow_workloads ? ", or a workload with a pod template)" : ")")};
}

}  // namespace

Result<std::vector<Document>> ParseDocuments(std::string_view text, std::string_view name) {
  const std::string label(name);
  if (text.size() > kMaxInputBytes) {
    return Error{label + ": larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB"};
  }
  if (IsBlank(text)) {
    return Error{label + ": empty: no objects"};
  }
  std::vector<Document> docs;
  if (LooksLikeJson(text)) {
    if (!DepthOk(text)) {
      return Error{label + ": JSON nesting deeper than " + std::to_string(kMaxDepth) + " levels"};
    }
    try {
      docs.push_back({json::parse(text), label});
    } catch (const std::exception& e) {
      return Error{label + ": invalid JSON: " + e.what()};
    }
    return docs;
  }
  if (const int line = StrayFlowEntryScan().Run(text); line != 0) {
    return Error{label + ": invalid YAML: line " + std::to_string(line) +
                 ": ',' outside a flow collection"};
  }
  try {
    // yaml-cpp shares aliased nodes, so loading stays small; the budget bounds the expansion.
    std::vector<YAML::Node> nodes = YAML::LoadAll(std::string(text));
    YamlToJson converter(2 * text.size() + 10000);
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::string where = label;
      if (nodes.size() > 1) {
        where += ": document " + std::to_string(i + 1);
      }
      json value = converter.Convert(nodes[i], 0);
      if (value.is_null()) {
        continue;  // "---" followed by nothing
      }
      docs.push_back({std::move(value), std::move(where)});
    }
  } catch (const YamlRefused& e) {
    return Error{label + ": " + e.message};
  } catch (const YAML::DeepRecursion& e) {
    return Error{label + ": YAML nesting too deep (line " + std::to_string(e.mark.line + 1) + ")"};
  } catch (const YAML::Exception& e) {
    return Error{label + ": invalid YAML: " + e.what()};
  } catch (const std::exception& e) {
    return Error{label + ": invalid YAML: " + e.what()};
  }
  if (docs.empty()) {
    return Error{label + ": empty: no objects"};
  }
  return docs;
}

Result<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    std::string text;
    if (!sys::ReadAllCapped(STDIN_FILENO, kMaxInputBytes, text)) {
      return Error{"-: standard input " + (errno == EFBIG
                                               ? "larger than " + sys::FormatByteCap(kMaxInputBytes)
                                               : std::string(std::strerror(errno)))};
    }
    return text;
  }
  auto text = sys::ReadRegularFile(path, kMaxInputBytes);
  if (!text.ok()) {
    return Error{text.error().msg};
  }
  return std::move(text).value();
}

Result<std::vector<Pod>> PodsFromDocuments(const std::vector<Document>& documents,
                                           bool allow_workloads) {
  std::vector<Pod> pods;
  for (const Document& doc : documents) {
    auto r = CollectPods(doc.value, doc.where, allow_workloads, false, pods);
    if (!r.ok()) {
      return r.error();
    }
  }
  return pods;
}

Result<std::vector<Pod>> LoadPods(const std::string& path, bool allow_workloads) {
  auto text = ReadInput(path);
  if (!text.ok()) {
    return text.error();
  }
  const std::string label = path == "-" ? "<stdin>" : path;
  auto docs = ParseDocuments(*text, label);
  if (!docs.ok()) {
    return docs.error();
  }
  auto pods = PodsFromDocuments(*docs, allow_workloads);
  if (!pods.ok()) {
    return pods.error();
  }
  for (Pod& pod : *pods) {
    pod.source = label;
  }
  return pods;
}

Result<Node> LoadNode(const std::string& path) {
  auto text = ReadInput(path);
  if (!text.ok()) {
    return text.error();
  }
  auto docs = ParseDocuments(*text, path);
  if (!docs.ok()) {
    return docs.error();
  }
  if (docs->size() != 1) {
    return Error{path + ": expected one Node, got " + std::to_string(docs->size()) + " documents"};
  }
  return DecodeNode(docs->front().value, docs->front().where);
}

void ApplyKubeletSourceDefaults(Pod& pod, const std::string& node_name, std::string_view source) {
  if (!node_name.empty() && !pod.name.ends_with("-" + node_name)) {
    pod.name += "-" + node_name;
  }
  pod.node_name = node_name;
  pod.annotations[std::string(kAnnotationConfigSource)] = std::string(source);
}

void ApplyStaticPodDefaults(Pod& pod, const std::string& node_name) {
  ApplyKubeletSourceDefaults(pod, node_name, kConfigSourceFile);
  pod.tolerations.push_back(Toleration{"", "Exists", "", "NoExecute", std::nullopt});
}

bool IsManifestFile(std::string_view filename) { return !filename.empty() && filename[0] != '.'; }

Result<Pod> DecodeManifest(std::string_view text, const std::string& name,
                           const std::string& node_name) {
  auto docs = ParseDocuments(text, name);
  if (!docs.ok()) {
    return docs.error();
  }
  // The kubelet reads exactly one pod per manifest file.
  if (docs->size() != 1) {
    return Error{name + ": a static-pod manifest holds one Pod, got " +
                 std::to_string(docs->size()) + " documents"};
  }
  const nlohmann::json& value = docs->front().value;
  if (value.is_object()) {
    auto kind = value.find("kind");
    if (kind != value.end() && kind->is_string() && kind->get<std::string>() != "Pod") {
      return Error{name + ": kind: a static-pod manifest must be a Pod, got \"" +
                   kind->get<std::string>() + "\""};
    }
  }
  auto pod = DecodePod(value, docs->front().where);
  if (!pod.ok()) {
    return pod.error();
  }
  pod->source = name;
  ApplyStaticPodDefaults(*pod, node_name);
  return pod;
}

Result<std::vector<Pod>> LoadManifestDir(const std::string& dir, const std::string& node_name,
                                         const std::string& skip_filename) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{dir + ": not a directory"};
  }
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string filename = it->path().filename().string();
    // The kubelet does not recurse into folders. Any other non-regular entry (a FIFO, a link to
    // a device) is not skipped silently: ReadInput refuses it with its type in the message.
    std::error_code type_ec;
    if (IsManifestFile(filename) && filename != skip_filename && !it->is_directory(type_ec)) {
      files.push_back(it->path());
    }
  }
  if (ec) {
    return Error{dir + ": " + ec.message()};
  }
  std::sort(files.begin(), files.end());
  std::vector<Pod> pods;
  for (const auto& file : files) {
    auto text = ReadInput(file.string());
    if (!text.ok()) {
      return text.error();
    }
    auto pod = DecodeManifest(*text, file.string(), node_name);
    if (!pod.ok()) {
      return pod.error();
    }
    pods.push_back(std::move(pod).value());
  }
  return pods;
}

}  // namespace nodegate::admit
