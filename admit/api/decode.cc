#include "admit/api/decode.h"

#include <arpa/inet.h>

#include <array>
#include <limits>
#include <utility>

#include "lib/json/field.h"

namespace nodegate::admit {
namespace {

using nlohmann::json;

// DecodeFailure travels inside this file only; the public functions turn it into an Error.
struct DecodeFailure {
  std::string path;
  std::string message;
};

std::string TypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "object";
    default:
      return "value";
  }
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) {
    return std::string(key);
  }
  return std::string(path) + "." + std::string(key);
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

[[noreturn]] void Fail(std::string path, std::string message) {
  throw DecodeFailure{std::move(path), std::move(message)};
}

[[noreturn]] void WrongType(const std::string& path, std::string_view want, const json& got) {
  Fail(path, "expected " + std::string(want) + ", got " + TypeName(got));
}

// The value the shared reader (lib/json/field.h) gave; a member of another type fails
// with its path. Absent and null read as not given: Go decodes null as the zero value. The
// result refers into `read`: use it in the expression that made `read`.
template <typename T>
const std::optional<T>& Checked(const json_field::FieldRead<T>& read, const std::string& path,
                                std::string_view want) {
  if (read.mismatched()) {
    WrongType(Join(path, read.mismatch().key), want, *read.mismatch().found);
  }
  return read.value();
}

const json* ObjectField(const json& object, std::string_view key, const std::string& path) {
  return Checked(json_field::ReadObject(object, key), path, "object").value_or(nullptr);
}

const json* ListField(const json& object, std::string_view key, const std::string& path) {
  return Checked(json_field::ReadList(object, key), path, "list").value_or(nullptr);
}

std::string StringField(const json& object, std::string_view key, const std::string& path) {
  return Checked(json_field::ReadString(object, key), path, "string").value_or("");
}

bool BoolField(const json& object, std::string_view key, const std::string& path) {
  return Checked(json_field::ReadBool(object, key), path, "boolean").value_or(false);
}

std::optional<int64_t> IntField(const json& object, std::string_view key, const std::string& path,
                                int64_t min, int64_t max) {
  const auto read = json_field::ReadInteger(object, key);
  const auto out_of_range = [&](const std::string& got) {
    Fail(Join(path, key),
         "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + got);
  };
  if (read.mismatched()) {
    const json& got = *read.mismatch().found;
    if (!got.is_number_integer()) {
      WrongType(Join(path, key), "integer", got);
    }
    out_of_range(got.dump());  // an integer beyond int64 is outside every range
  }
  if (!read.given()) {
    return std::nullopt;
  }
  const int64_t value = *read.value();
  if (value < min || value > max) {
    out_of_range(std::to_string(value));
  }
  return value;
}

std::map<std::string, std::string> StringMapField(const json& object, std::string_view key,
                                                  const std::string& path) {
  std::map<std::string, std::string> out;
  const json* j = ObjectField(object, key, path);
  if (j == nullptr) {
    return out;
  }
  const std::string map_path = Join(path, key);
  for (auto it = j->begin(); it != j->end(); ++it) {
    if (!it.value().is_string()) {
      WrongType(map_path + "[" + it.key() + "]", "string", it.value());
    }
    out.emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

std::vector<std::string> StringListField(const json& object, std::string_view key,
                                         const std::string& path) {
  const auto read = json_field::ReadStringList(object, key);
  if (read.mismatched()) {
    const json_field::FieldMismatch& mismatch = read.mismatch();
    if (mismatch.index) {
      WrongType(Index(Join(path, key), *mismatch.index), "string", *mismatch.found);
    }
    WrongType(Join(path, key), "list", *mismatch.found);
  }
  return read.value_or({});
}

// QuantityText: quantities are strings or JSON numbers (resource.Quantity.UnmarshalJSON).
Quantity DecodeQuantity(const json& j, const std::string& path) {
  std::string text;
  if (j.is_string()) {
    text = j.get<std::string>();
  } else if (j.is_number_integer()) {
    text = std::to_string(j.get<int64_t>());
  } else if (j.is_number_unsigned()) {
    text = std::to_string(j.get<uint64_t>());
  } else if (j.is_number_float()) {
    text = j.dump();
  } else {
    WrongType(path, "quantity (string or number)", j);
  }
  auto q = Quantity::Parse(text);
  if (!q.ok()) {
    Fail(path, "invalid quantity \"" + text + "\": " + q.error().msg);
  }
  return *q;
}

ResourceList ResourceListField(const json& object, std::string_view key, const std::string& path,
                               bool allow_negative) {
  ResourceList out;
  const json* j = ObjectField(object, key, path);
  if (j == nullptr) {
    return out;
  }
  const std::string list_path = Join(path, key);
  for (auto it = j->begin(); it != j->end(); ++it) {
    const std::string field = list_path + "[" + it.key() + "]";
    if (it.key().empty()) {
      Fail(field, "resource name must not be empty");
    }
    Quantity q = DecodeQuantity(it.value(), field);
    if (!allow_negative && q.IsNegative()) {
      Fail(field, "must be greater than or equal to 0");
    }
    out.emplace(it.key(), q);
  }
  return out;
}

bool IsValidIp(const std::string& ip) {
  std::array<unsigned char, 16> buf{};
  return inet_pton(AF_INET, ip.c_str(), buf.data()) == 1 ||
         inet_pton(AF_INET6, ip.c_str(), buf.data()) == 1;
}

template <size_t N>
void CheckEnum(const std::string& value, const std::array<std::string_view, N>& allowed,
               const std::string& path) {
  for (std::string_view a : allowed) {
    if (value == a) {
      return;
    }
  }
  std::string list;
  for (std::string_view a : allowed) {
    if (!a.empty()) {
      list += list.empty() ? "" : ", ";
      list += "\"" + std::string(a) + "\"";
    }
  }
  Fail(path, "unsupported value \"" + value + "\": supported values: " + list);
}

ContainerPort DecodePort(const json& j, const std::string& path) {
  if (!j.is_object()) {
    WrongType(path, "object", j);
  }
  ContainerPort port;
  port.name = StringField(j, "name", path);
  auto container_port = IntField(j, "containerPort", path, 1, 65535);
  if (!container_port) {
    Fail(Join(path, "containerPort"), "required");
  }
  port.container_port = static_cast<int32_t>(*container_port);
  port.host_port = static_cast<int32_t>(IntField(j, "hostPort", path, 0, 65535).value_or(0));
  port.protocol = StringField(j, "protocol", path);
  CheckEnum(port.protocol, std::array<std::string_view, 4>{"", "TCP", "UDP", "SCTP"},
            Join(path, "protocol"));
  port.host_ip = StringField(j, "hostIP", path);
  if (!port.host_ip.empty() && !IsValidIp(port.host_ip)) {
    Fail(Join(path, "hostIP"), "must be a valid IP address, got \"" + port.host_ip + "\"");
  }
  return port;
}

// DecodedResources: a resources block as the API stores it.
struct DecodedResources {
  ResourceList requests;
  ResourceList limits;
};

// Requests default to limits for every resource that has a limit but no request
// (SetDefaults_ResourceList via SetDefaults_Container).
DecodedResources DecodeResources(const json& owner, const std::string& path) {
  const json* resources = ObjectField(owner, "resources", path);
  if (resources == nullptr) {
    return {};
  }
  const std::string rpath = Join(path, "resources");
  DecodedResources out;
  out.requests = ResourceListField(*resources, "requests", rpath, false);
  out.limits = ResourceListField(*resources, "limits", rpath, false);
  for (const auto& [name, q] : out.limits) {
    out.requests.emplace(name, q);
  }
  return out;
}

Container DecodeContainer(const json& j, const std::string& path, bool init) {
  if (!j.is_object()) {
    WrongType(path, "object", j);
  }
  Container c;
  c.name = StringField(j, "name", path);
  if (c.name.empty()) {
    Fail(Join(path, "name"), "required");
  }
  if (const json* ports = ListField(j, "ports", path)) {
    for (size_t i = 0; i < ports->size(); ++i) {
      c.ports.push_back(DecodePort((*ports)[i], Index(Join(path, "ports"), i)));
    }
  }
  DecodedResources resources = DecodeResources(j, path);
  c.requests = std::move(resources.requests);
  c.limits = std::move(resources.limits);
  c.restart_policy = StringField(j, "restartPolicy", path);
  if (init) {
    CheckEnum(c.restart_policy, std::array<std::string_view, 2>{"", "Always"},
              Join(path, "restartPolicy"));
  } else if (!c.restart_policy.empty()) {
    Fail(Join(path, "restartPolicy"), "may only be set on init containers");
  }
  return c;
}

Toleration DecodeToleration(const json& j, const std::string& path) {
  if (!j.is_object()) {
    WrongType(path, "object", j);
  }
  Toleration t;
  t.key = StringField(j, "key", path);
  t.op = StringField(j, "operator", path);
  t.value = StringField(j, "value", path);
  t.effect = StringField(j, "effect", path);
  t.toleration_seconds = IntField(j, "tolerationSeconds", path, std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
  // Lt and Gt exist behind TaintTolerationComparisonOperators; the matcher checks the gate.
  CheckEnum(t.op, std::array<std::string_view, 5>{"", "Equal", "Exists", "Lt", "Gt"},
            Join(path, "operator"));
  CheckEnum(t.effect,
            std::array<std::string_view, 4>{"", "NoSchedule", "PreferNoSchedule", "NoExecute"},
            Join(path, "effect"));
  if (t.op == "Exists" && !t.value.empty()) {
    Fail(Join(path, "value"), "must be empty when operator is Exists");
  }
  if (t.key.empty() && t.op != "Exists") {
    Fail(Join(path, "operator"), "must be Exists when key is empty");
  }
  return t;
}

std::vector<NodeSelectorRequirement> DecodeRequirements(const json& term, std::string_view key,
                                                        const std::string& path) {
  std::vector<NodeSelectorRequirement> out;
  const json* list = ListField(term, key, path);
  if (list == nullptr) {
    return out;
  }
  const std::string list_path = Join(path, key);
  for (size_t i = 0; i < list->size(); ++i) {
    const json& j = (*list)[i];
    const std::string rpath = Index(list_path, i);
    if (!j.is_object()) {
      WrongType(rpath, "object", j);
    }
    NodeSelectorRequirement r;
    r.key = StringField(j, "key", rpath);
    r.op = StringField(j, "operator", rpath);
    CheckEnum(r.op,
              std::array<std::string_view, 6>{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"},
              Join(rpath, "operator"));
    r.values = StringListField(j, "values", rpath);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<NodeSelector> DecodeRequiredAffinity(const json& spec, const std::string& path) {
  const json* affinity = ObjectField(spec, "affinity", path);
  if (affinity == nullptr) {
    return std::nullopt;
  }
  const std::string apath = Join(path, "affinity");
  const json* node_affinity = ObjectField(*affinity, "nodeAffinity", apath);
  if (node_affinity == nullptr) {
    return std::nullopt;
  }
  const std::string napath = Join(apath, "nodeAffinity");
  const json* required =
      ObjectField(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", napath);
  if (required == nullptr) {
    return std::nullopt;
  }
  const std::string rpath = Join(napath, "requiredDuringSchedulingIgnoredDuringExecution");
  NodeSelector selector;
  if (const json* terms = ListField(*required, "nodeSelectorTerms", rpath)) {
    for (size_t i = 0; i < terms->size(); ++i) {
      const std::string tpath = Index(Join(rpath, "nodeSelectorTerms"), i);
      const json& t = (*terms)[i];
      if (t.is_null()) {
        selector.terms.emplace_back();
        continue;
      }
      if (!t.is_object()) {
        WrongType(tpath, "object", t);
      }
      NodeSelectorTerm term;
      term.match_expressions = DecodeRequirements(t, "matchExpressions", tpath);
      term.match_fields = DecodeRequirements(t, "matchFields", tpath);
      selector.terms.push_back(std::move(term));
    }
  }
  return selector;
}

void DecodeStatuses(const json& status, std::string_view key, const std::string& path,
                    std::vector<ContainerStatusResources>& out) {
  const json* list = ListField(status, key, path);
  if (list == nullptr) {
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string spath = Index(Join(path, key), i);
    const json& j = (*list)[i];
    if (!j.is_object()) {
      WrongType(spath, "object", j);
    }
    ContainerStatusResources cs;
    cs.name = StringField(j, "name", spath);
    if (json_field::GivenField(j, "allocatedResources") != nullptr) {
      cs.allocated_resources = ResourceListField(j, "allocatedResources", spath, false);
    }
    if (const json* res = ObjectField(j, "resources", spath)) {
      if (json_field::GivenField(*res, "requests") != nullptr) {
        cs.resources_requests =
            ResourceListField(*res, "requests", Join(spath, "resources"), false);
      }
    }
    out.push_back(std::move(cs));
  }
}

void DecodeMetadata(const json& object, const std::string& path, Pod& pod) {
  const json* metadata = ObjectField(object, "metadata", path);
  if (metadata == nullptr) {
    Fail(Join(path, "metadata"), "required");
  }
  const std::string mpath = Join(path, "metadata");
  pod.name = StringField(*metadata, "name", mpath);
  if (pod.name.empty()) {
    Fail(Join(mpath, "name"), "required");
  }
  pod.namespace_name = StringField(*metadata, "namespace", mpath);
  if (pod.namespace_name.empty()) {
    pod.namespace_name = "default";
  }
  pod.uid = StringField(*metadata, "uid", mpath);
  pod.creation_timestamp = StringField(*metadata, "creationTimestamp", mpath);
  pod.labels = StringMapField(*metadata, "labels", mpath);
  pod.annotations = StringMapField(*metadata, "annotations", mpath);
  if (const json* owners = ListField(*metadata, "ownerReferences", mpath)) {
    for (size_t i = 0; i < owners->size(); ++i) {
      const json& ref = (*owners)[i];
      const std::string rpath = Index(Join(mpath, "ownerReferences"), i);
      if (!ref.is_object()) {
        WrongType(rpath, "object", ref);
      }
      // The controller is the owner an explanation names (kubectl describe's "Controlled By").
      if (BoolField(ref, "controller", rpath)) {
        pod.owner =
            OwnerReference{StringField(ref, "kind", rpath), StringField(ref, "name", rpath)};
        break;
      }
    }
  }
}

void DecodeSpec(const json& spec, const std::string& spath, Pod& pod) {
  pod.node_name = StringField(spec, "nodeName", spath);
  pod.host_network = BoolField(spec, "hostNetwork", spath);
  const json* containers = ListField(spec, "containers", spath);
  if (containers == nullptr || containers->empty()) {
    Fail(Join(spath, "containers"), "required: a pod needs at least one container");
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    pod.containers.push_back(
        DecodeContainer((*containers)[i], Index(Join(spath, "containers"), i), false));
  }
  if (const json* init = ListField(spec, "initContainers", spath)) {
    for (size_t i = 0; i < init->size(); ++i) {
      pod.init_containers.push_back(
          DecodeContainer((*init)[i], Index(Join(spath, "initContainers"), i), true));
    }
  }
  if (const json* tolerations = ListField(spec, "tolerations", spath)) {
    for (size_t i = 0; i < tolerations->size(); ++i) {
      pod.tolerations.push_back(
          DecodeToleration((*tolerations)[i], Index(Join(spath, "tolerations"), i)));
    }
  }
  pod.node_selector = StringMapField(spec, "nodeSelector", spath);
  pod.required_node_affinity = DecodeRequiredAffinity(spec, spath);
  pod.overhead = ResourceListField(spec, "overhead", spath, false);
  if (json_field::GivenField(spec, "resources") != nullptr) {
    DecodedResources resources = DecodeResources(spec, spath);
    pod.pod_level_requests = std::move(resources.requests);
    pod.pod_level_limits = std::move(resources.limits);
  }
  if (const json* os = ObjectField(spec, "os", spath)) {
    pod.os_name = StringField(*os, "name", Join(spath, "os"));
  }
  if (const json* sc = ObjectField(spec, "securityContext", spath)) {
    const std::string scpath = Join(spath, "securityContext");
    pod.supplemental_groups_policy = StringField(*sc, "supplementalGroupsPolicy", scpath);
    CheckEnum(pod.supplemental_groups_policy,
              std::array<std::string_view, 3>{"", "Merge", "Strict"},
              Join(scpath, "supplementalGroupsPolicy"));
  }
  if (auto priority = IntField(spec, "priority", spath, std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max())) {
    pod.priority = static_cast<int32_t>(*priority);
  }
  pod.priority_class_name = StringField(spec, "priorityClassName", spath);
}

Error ToError(std::string_view where, const DecodeFailure& f) {
  std::string message(where);
  if (!f.path.empty()) {
    message += ": " + f.path;
  }
  message += ": " + f.message;
  return Error(kErrDecode, std::move(message));
}

}  // namespace

void ApplyHostNetworkPortDefaults(Pod& pod) {
  if (!pod.host_network) {
    return;
  }
  for (auto* list : {&pod.containers, &pod.init_containers}) {
    for (Container& c : *list) {
      for (ContainerPort& p : c.ports) {
        if (p.host_port == 0) {
          p.host_port = p.container_port;
        }
      }
    }
  }
}

Result<Pod> DecodePod(const json& object, std::string_view where) {
  try {
    if (!object.is_object()) {
      Fail("", "expected a Pod object, got " + TypeName(object));
    }
    Pod pod;
    DecodeMetadata(object, "", pod);
    const json* spec = ObjectField(object, "spec", "");
    if (spec == nullptr) {
      Fail("spec", "required");
    }
    DecodeSpec(*spec, "spec", pod);
    if (const json* status = ObjectField(object, "status", "")) {
      pod.phase = StringField(*status, "phase", "status");
      pod.qos_class = StringField(*status, "qosClass", "status");
      pod.start_time = StringField(*status, "startTime", "status");
      CheckEnum(pod.qos_class,
                std::array<std::string_view, 4>{"", "Guaranteed", "Burstable", "BestEffort"},
                "status.qosClass");
      DecodeStatuses(*status, "containerStatuses", "status", pod.container_statuses);
      DecodeStatuses(*status, "initContainerStatuses", "status", pod.container_statuses);
    }
    ApplyHostNetworkPortDefaults(pod);
    return pod;
  } catch (const DecodeFailure& f) {
    return ToError(where, f);
  } catch (const std::exception& e) {
    return Error(kErrDecode, std::string(where) + ": " + e.what());
  }
}

Result<Pod> DecodePodTemplate(const json& workload, std::string_view where) {
  try {
    Pod pod;
    DecodeMetadata(workload, "", pod);
    const json* spec = ObjectField(workload, "spec", "");
    if (spec == nullptr) {
      Fail("spec", "required");
    }
    const json* tmpl = ObjectField(*spec, "template", "spec");
    if (tmpl == nullptr) {
      Fail("spec.template", "required");
    }
    if (const json* tmeta = ObjectField(*tmpl, "metadata", "spec.template")) {
      pod.labels = StringMapField(*tmeta, "labels", "spec.template.metadata");
      pod.annotations = StringMapField(*tmeta, "annotations", "spec.template.metadata");
    }
    const json* pspec = ObjectField(*tmpl, "spec", "spec.template");
    if (pspec == nullptr) {
      Fail("spec.template.spec", "required");
    }
    DecodeSpec(*pspec, "spec.template.spec", pod);
    ApplyHostNetworkPortDefaults(pod);
    return pod;
  } catch (const DecodeFailure& f) {
    return ToError(where, f);
  } catch (const std::exception& e) {
    return Error(kErrDecode, std::string(where) + ": " + e.what());
  }
}

Result<Node> DecodeNode(const json& object, std::string_view where) {
  try {
    if (!object.is_object()) {
      Fail("", "expected a Node object, got " + TypeName(object));
    }
    const std::string kind = StringField(object, "kind", "");
    if (!kind.empty() && kind != "Node") {
      Fail("kind", "expected Node, got \"" + kind + "\"");
    }
    Node node;
    const json* metadata = ObjectField(object, "metadata", "");
    if (metadata == nullptr) {
      Fail("metadata", "required");
    }
    node.name = StringField(*metadata, "name", "metadata");
    if (node.name.empty()) {
      Fail("metadata.name", "required");
    }
    node.labels = StringMapField(*metadata, "labels", "metadata");
    if (const json* spec = ObjectField(object, "spec", "")) {
      node.unschedulable = BoolField(*spec, "unschedulable", "spec");
      if (const json* taints = ListField(*spec, "taints", "spec")) {
        for (size_t i = 0; i < taints->size(); ++i) {
          const std::string tpath = Index("spec.taints", i);
          const json& j = (*taints)[i];
          if (!j.is_object()) {
            WrongType(tpath, "object", j);
          }
          Taint t;
          t.key = StringField(j, "key", tpath);
          t.value = StringField(j, "value", tpath);
          t.effect = StringField(j, "effect", tpath);
          if (t.key.empty()) {
            Fail(Join(tpath, "key"), "required");
          }
          CheckEnum(t.effect,
                    std::array<std::string_view, 3>{"NoSchedule", "PreferNoSchedule", "NoExecute"},
                    Join(tpath, "effect"));
          node.taints.push_back(std::move(t));
        }
      }
    }
    if (const json* status = ObjectField(object, "status", "")) {
      node.capacity = ResourceListField(*status, "capacity", "status", false);
      if (json_field::GivenField(*status, "allocatable") != nullptr) {
        node.allocatable = ResourceListField(*status, "allocatable", "status", false);
      } else {
        node.allocatable = node.capacity;  // SetDefaults_NodeStatus
      }
      if (const json* features = ObjectField(*status, "features", "status")) {
        if (json_field::GivenField(*features, "supplementalGroupsPolicy") != nullptr) {
          node.supports_supplemental_groups_policy =
              BoolField(*features, "supplementalGroupsPolicy", "status.features");
        }
      }
    }
    return node;
  } catch (const DecodeFailure& f) {
    return ToError(where, f);
  } catch (const std::exception& e) {
    return Error(kErrDecode, std::string(where) + ": " + e.what());
  }
}

}  // namespace nodegate::admit
