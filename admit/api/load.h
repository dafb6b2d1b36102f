#pragma once
// Reading the checker's inputs: files (or stdin) holding JSON or YAML, single or multi-document,
// with Pod, PodList, List, a JSON array of pods, or a workload whose template is the pod; and
// static-pod manifest folders. Untrusted input is bounded: file size, nesting depth and (for
// YAML aliases) the expanded size, so a YAML bomb fails with an error instead of eating memory.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "lib/base/result.h"

namespace nodegate::admit {

// A parsed document and its name for messages ("pods.yaml: document 2").
struct Document {
  nlohmann::json value;
  std::string where;
};

// ParseDocuments: JSON when the first non-blank character is '{' or '[', YAML otherwise
// (every "---"-separated document; empty documents are skipped). `name` labels errors.
Result<std::vector<Document>> ParseDocuments(std::string_view text, std::string_view name);

// ReadInput: the contents of `path`, or of stdin when path is "-". A path must name a regular
// file (symlinks followed): a FIFO, a device or a folder is an error, never a hang or an
// endless read; both are capped at 256 MiB.
Result<std::string> ReadInput(const std::string& path);

// PodsFromDocuments: every pod in the documents. Pod (or no kind), PodList and List (non-Pod
// items of a List are skipped), JSON arrays; with `allow_workloads`, also the pod template of
// DaemonSet, Deployment, ReplicaSet, StatefulSet, Job and ReplicationController.
Result<std::vector<Pod>> PodsFromDocuments(const std::vector<Document>& documents,
                                           bool allow_workloads);

// LoadPods: ReadInput + ParseDocuments + PodsFromDocuments, each pod's source set to `path`.
Result<std::vector<Pod>> LoadPods(const std::string& path, bool allow_workloads);

// LoadNode: one v1 Node (JSON or YAML).
Result<Node> LoadNode(const std::string& path);

// ApplyStaticPodDefaults: what the kubelet's file source does to a manifest
// (pkg/kubelet/config/common.go applyDefaults): nodeName = the node, name suffixed with
// "-<node>", config.source=file annotation, and the toleration {Exists, NoExecute}.
void ApplyStaticPodDefaults(Pod& pod, const std::string& node_name);

// ApplyKubeletSourceDefaults: what both local sources do: nodeName = the node, name suffixed
// with "-<node>", and kubernetes.io/config.source = `source` ("file" or "http"). Only the file
// source adds the {Exists, NoExecute} toleration (ApplyStaticPodDefaults).
void ApplyKubeletSourceDefaults(Pod& pod, const std::string& node_name, std::string_view source);

// IsManifestFile: the names the kubelet's file source reads from a folder (not hidden).
bool IsManifestFile(std::string_view filename);

// LoadManifestDir: every manifest in a static-pod folder (sorted by file name), as static pods
// on `node_name`. Hidden files and sub-folders are skipped, as the kubelet does; so is
// `skip_filename` (the file a guarded install is about to replace). Any other entry that is
// not a regular file (a FIFO, a link to a device or to nothing) is an error naming it.
Result<std::vector<Pod>> LoadManifestDir(const std::string& dir, const std::string& node_name,
                                         const std::string& skip_filename = "");

// DecodeManifest: one static-pod manifest's text (exactly one Pod), with static-pod defaults.
Result<Pod> DecodeManifest(std::string_view text, const std::string& name,
                           const std::string& node_name);

}  // namespace nodegate::admit
