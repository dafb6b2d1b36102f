#pragma once
// The slice of the Kubernetes core/v1 API that the admission predicates read: Pod, Node and
// their parts. Field names follow the API (snake_case); enum-like fields keep the API's strings
// so that reports print exactly what the user wrote.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "admit/api/quantity.h"

namespace nodegate::admit {

// ResourceList maps a resource name ("cpu", "memory", "example.com/gpu") to a quantity.
using ResourceList = std::map<std::string, Quantity>;

inline constexpr std::string_view kResourceCpu = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";

struct ContainerPort {
  std::string name;
  int32_t container_port = 0;
  int32_t host_port = 0;
  std::string protocol;  // "" means TCP
  std::string host_ip;   // "" means 0.0.0.0
};

// ContainerStatusResources: what the kubelet reports for a running container; used for pods
// already on the node when in-place resize is on.
struct ContainerStatusResources {
  std::string name;
  std::optional<ResourceList> allocated_resources;
  std::optional<ResourceList> resources_requests;  // status.containerStatuses[].resources
};

struct Container {
  std::string name;
  std::vector<ContainerPort> ports;
  ResourceList requests;       // limits already copied in where a request is missing
  std::string restart_policy;  // init containers: "Always" makes a sidecar
  ResourceList limits;         // only the kubelet's QoS class reads them
};

struct Toleration {
  std::string key;
  std::string op;  // "", Equal, Exists, Lt, Gt
  std::string value;
  std::string effect;  // "", NoSchedule, PreferNoSchedule, NoExecute
  std::optional<int64_t> toleration_seconds;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
};

struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
};

// QosClass: status.qosClass (pkg/apis/core/v1/helper/qos; admit/kubelet/qos.h computes it).
enum class QosClass { kBestEffort, kBurstable, kGuaranteed };

// OwnerReference: the pod's controller (metadata.ownerReferences with controller: true), for
// explanations ("DaemonSet kube-system/node-local-dns").
struct OwnerReference {
  std::string kind;
  std::string name;
};

inline constexpr std::string_view kAnnotationConfigSource = "kubernetes.io/config.source";
inline constexpr std::string_view kAnnotationConfigMirror = "kubernetes.io/config.mirror";
// The values of kubernetes.io/config.source for the kubelet's two local pod sources.
inline constexpr std::string_view kConfigSourceFile = "file";
inline constexpr std::string_view kConfigSourceHttp = "http";
inline constexpr std::string_view kLabelOs = "kubernetes.io/os";
inline constexpr std::string_view kLabelArch = "kubernetes.io/arch";
inline constexpr std::string_view kLabelHostname = "kubernetes.io/hostname";

struct Pod {
  // metadata
  std::string namespace_name;  // "" is defaulted to "default" when decoded
  std::string name;
  std::string uid;
  std::string creation_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<OwnerReference> owner;
  // spec
  std::string node_name;
  bool host_network = false;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::vector<Toleration> tolerations;
  std::map<std::string, std::string> node_selector;
  std::optional<NodeSelector> required_node_affinity;
  ResourceList overhead;
  std::optional<ResourceList> pod_level_requests;  // spec.resources.requests
  ResourceList pod_level_limits;                   // spec.resources.limits
  std::string os_name;                             // spec.os.name
  std::string supplemental_groups_policy;          // spec.securityContext.supplementalGroupsPolicy
  std::optional<int32_t> priority;
  std::string priority_class_name;
  // status
  std::string phase;
  std::string qos_class;   // status.qosClass: Guaranteed, Burstable, BestEffort or ""
  std::string start_time;  // status.startTime (RFC 3339), "" until the kubelet starts it
  std::vector<ContainerStatusResources> container_statuses;  // regular and init

  // Where the pod came from ("pods.json", "/etc/kubernetes/manifests/web.yaml"), for reports.
  std::string source;

  // Key: NAMESPACE/NAME, the identity used to replace a previous version of a pod.
  std::string Key() const { return namespace_name + "/" + name; }
  // IsStaticPod: kubernetes.io/config.source present and not "api" (kubelet types.IsStaticPod).
  bool IsStaticPod() const;
  bool IsMirrorPod() const { return annotations.count(std::string(kAnnotationConfigMirror)) > 0; }
  bool IsTerminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  bool unschedulable = false;
  std::vector<Taint> taints;
  ResourceList capacity;
  ResourceList allocatable;
  // status.features.supplementalGroupsPolicy
  std::optional<bool> supports_supplemental_groups_policy;
};

inline bool Pod::IsStaticPod() const {
  auto it = annotations.find(std::string(kAnnotationConfigSource));
  return it != annotations.end() && it->second != "api";
}

}  // namespace nodegate::admit
