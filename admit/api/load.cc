#include "admit/api/load.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "admit/api/decode.h"
#include "admit/api/yaml.h"
#include "lib/base/result.h"
#include "lib/sys/io.h"

namespace nodegate::admit {
namespace {

using nlohmann::json;

constexpr size_t kMaxInputBytes = 256u << 20;

// DepthOk: JSON nesting within kMaxDocumentDepth, checked without recursion.
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
      if (++depth > kMaxDocumentDepth) {
        return false;
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

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

nodegate::Status CollectPods(const json& value, const std::string& where, bool allow_workloads,
                             bool inside_list, std::vector<Pod>& out) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      auto r =
          CollectPods(value[i], where + "[" + std::to_string(i) + "]", allow_workloads, true, out);
      if (!r.ok()) {
        return r;
      }
    }
    return OkStatus();
  }
  if (!value.is_object()) {
    return Error(kErrDecode, where + ": expected an object, got " +
                                 std::string(value.is_string() ? "a string" : "a scalar"));
  }
  std::string kind;
  if (auto it = value.find("kind"); it != value.end() && !it->is_null()) {
    if (!it->is_string()) {
      return Error(kErrDecode, where + ": kind: expected string");
    }
    kind = it->get<std::string>();
  }
  if (kind == "PodList" || kind == "List") {
    auto items = value.find("items");
    if (items == value.end() || items->is_null()) {
      return OkStatus();  // an empty list
    }
    if (!items->is_array()) {
      return Error(kErrDecode, where + ": items: expected list");
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
      NG_RETURN_IF_ERROR(CollectPods(item, item_where, allow_workloads, true, out));
    }
    return OkStatus();
  }
  if (kind.empty() || kind == "Pod") {
    NG_ASSIGN_OR_RETURN(auto pod, DecodePod(value, where));
    out.push_back(std::move(pod));
    return OkStatus();
  }
  if (allow_workloads && IsWorkloadKind(kind)) {
    NG_ASSIGN_OR_RETURN(auto pod, DecodePodTemplate(value, where));
    out.push_back(std::move(pod));
    return OkStatus();
  }
  (void)inside_list;
  return Error(kErrDecode, where + ": kind: unsupported kind \"" + kind +
                               "\" (want Pod, PodList or List" +
                               (allow_workloads ? ", or a workload with a pod template)" : ")"));
}

}  // namespace

Result<std::vector<Document>> ParseDocuments(std::string_view text, std::string_view name) {
  const std::string label(name);
  if (text.size() > kMaxInputBytes) {
    return Error(kErrDecode,
                 label + ": larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB");
  }
  if (IsBlank(text)) {
    return Error(kErrDecode, label + ": empty: no objects");
  }
  std::vector<Document> docs;
  if (LooksLikeJson(text)) {
    if (!DepthOk(text)) {
      return Error(kErrDecode, label + ": JSON nesting deeper than " +
                                   std::to_string(kMaxDocumentDepth) + " levels");
    }
    try {
      docs.push_back({json::parse(text), label});
    } catch (const std::exception& e) {
      return Error(kErrDecode, label + ": invalid JSON: " + e.what());
    }
    return docs;
  }
  auto values = YamlDocumentsToJson(text);
  if (!values.ok()) {
    return values.error().WithContext(label);
  }
  for (size_t i = 0; i < values->size(); ++i) {
    json& value = (*values)[i];
    if (value.is_null()) {
      continue;  // "---" followed by nothing
    }
    std::string where = label;
    if (values->size() > 1) {
      where += ": document " + std::to_string(i + 1);
    }
    docs.push_back({std::move(value), std::move(where)});
  }
  if (docs.empty()) {
    return Error(kErrDecode, label + ": empty: no objects");
  }
  return docs;
}

Result<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    std::string text;
    if (!sys::ReadAllCapped(STDIN_FILENO, kMaxInputBytes, text)) {
      return Error(kErrIo, "-: standard input " +
                               (errno == EFBIG ? "larger than " + sys::FormatByteCap(kMaxInputBytes)
                                               : std::string(std::strerror(errno))));
    }
    return text;
  }
  return sys::ReadRegularFile(path, kMaxInputBytes);
}

Result<std::vector<Pod>> PodsFromDocuments(const std::vector<Document>& documents,
                                           bool allow_workloads) {
  std::vector<Pod> pods;
  for (const Document& doc : documents) {
    NG_RETURN_IF_ERROR(CollectPods(doc.value, doc.where, allow_workloads, false, pods));
  }
  return pods;
}

Result<std::vector<Pod>> LoadPods(const std::string& path, bool allow_workloads) {
  NG_ASSIGN_OR_RETURN(auto text, ReadInput(path));
  const std::string label = path == "-" ? "<stdin>" : path;
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, label));
  NG_ASSIGN_OR_RETURN(auto pods, PodsFromDocuments(docs, allow_workloads));
  for (Pod& pod : pods) {
    pod.source = label;
  }
  return pods;
}

Result<Node> LoadNode(const std::string& path) {
  NG_ASSIGN_OR_RETURN(auto text, ReadInput(path));
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, path));
  if (docs.size() != 1) {
    return Error(kErrDecode,
                 path + ": expected one Node, got " + std::to_string(docs.size()) + " documents");
  }
  return DecodeNode(docs.front().value, docs.front().where);
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
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, name));
  // The kubelet reads exactly one pod per manifest file.
  if (docs.size() != 1) {
    return Error(kErrDecode, name + ": a static-pod manifest holds one Pod, got " +
                                 std::to_string(docs.size()) + " documents");
  }
  const nlohmann::json& value = docs.front().value;
  if (value.is_object()) {
    auto kind = value.find("kind");
    if (kind != value.end() && kind->is_string() && kind->get<std::string>() != "Pod") {
      return Error(kErrDecode, name + ": kind: a static-pod manifest must be a Pod, got \"" +
                                   kind->get<std::string>() + "\"");
    }
  }
  NG_ASSIGN_OR_RETURN(Pod pod, DecodePod(value, docs.front().where));
  pod.source = name;
  ApplyStaticPodDefaults(pod, node_name);
  return pod;
}

Result<std::vector<Pod>> LoadManifestDir(const std::string& dir, const std::string& node_name,
                                         const std::string& skip_filename) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error(kErrIo, dir + ": not a directory");
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
    return Error(kErrIo, dir + ": " + ec.message());
  }
  std::sort(files.begin(), files.end());
  std::vector<Pod> pods;
  for (const auto& file : files) {
    NG_ASSIGN_OR_RETURN(auto text, ReadInput(file.string()));
    NG_ASSIGN_OR_RETURN(auto pod, DecodeManifest(text, file.string(), node_name));
    pods.push_back(std::move(pod));
  }
  return pods;
}

}  // namespace nodegate::admit
