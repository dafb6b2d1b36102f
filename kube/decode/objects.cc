#include "kube/decode/objects.h"

#include <simdjson.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "admit/api/decode.h"
#include "admit/check/pod_facts.h"

namespace nodegate::kube {
namespace {

namespace od = simdjson::ondemand;
using nlohmann::json;

// Projection: which members of a JSON value to copy. A value with no projection is copied
// whole; an object with `fields` keeps only those members (each with its own projection); an
// array with `element` applies it to every element.
struct Projection {
  std::vector<std::pair<std::string_view, const Projection*>> fields;
  const Projection* element = nullptr;
};

// Built once; `nullptr` as a field's projection means "the whole value".
const Projection& Fields(std::initializer_list<std::pair<std::string_view, const Projection*>> f) {
  return *new Projection{std::vector<std::pair<std::string_view, const Projection*>>(f), nullptr};
}
const Projection& Each(const Projection& element) { return *new Projection{{}, &element}; }

// What admit::DecodePod reads of a pod already bound to a node, and what the caches need
// (resourceVersion). Left out: labels and the annotations other than the two that make a pod
// static or mirror (the kubelet profile reads neither of a pod on the node), tolerations,
// affinity, nodeSelector (they decide where a pod may go, not what it holds there).
const Projection& PodProjectionTree() {
  static const Projection& container = Fields(
      {{"name", nullptr}, {"ports", nullptr}, {"resources", nullptr}, {"restartPolicy", nullptr}});
  static const Projection& status_resources = Fields({{"requests", nullptr}});
  static const Projection& container_status = Fields(
      {{"name", nullptr}, {"allocatedResources", nullptr}, {"resources", &status_resources}});
  static const Projection& annotations = Fields(
      {{admit::kAnnotationConfigSource, nullptr}, {admit::kAnnotationConfigMirror, nullptr}});
  static const Projection& metadata = Fields({{"name", nullptr},
                                              {"namespace", nullptr},
                                              {"uid", nullptr},
                                              {"resourceVersion", nullptr},
                                              {"creationTimestamp", nullptr},
                                              {"annotations", &annotations},
                                              {"ownerReferences", nullptr}});
  static const Projection& spec = Fields({{"nodeName", nullptr},
                                          {"hostNetwork", nullptr},
                                          {"containers", &Each(container)},
                                          {"initContainers", &Each(container)},
                                          {"overhead", nullptr},
                                          {"resources", nullptr},
                                          {"priority", nullptr},
                                          {"priorityClassName", nullptr}});
  static const Projection& status = Fields({{"phase", nullptr},
                                            {"qosClass", nullptr},
                                            {"containerStatuses", &Each(container_status)},
                                            {"initContainerStatuses", &Each(container_status)}});
  static const Projection& pod =
      Fields({{"metadata", &metadata}, {"spec", &spec}, {"status", &status}});
  return pod;
}

// What admit::DecodeNode reads (a node's status.images and conditions are left behind).
const Projection& NodeProjectionTree() {
  static const Projection& metadata =
      Fields({{"name", nullptr}, {"labels", nullptr}, {"resourceVersion", nullptr}});
  static const Projection& spec = Fields({{"unschedulable", nullptr}, {"taints", nullptr}});
  static const Projection& status =
      Fields({{"capacity", nullptr}, {"allocatable", nullptr}, {"features", nullptr}});
  static const Projection& node =
      Fields({{"kind", nullptr}, {"metadata", &metadata}, {"spec", &spec}, {"status", &status}});
  return node;
}

// A watch event's object is a pod, a node, a bookmark (metadata.resourceVersion) or a Status.
const Projection& EventProjectionTree(Kind kind) {
  auto with_status = [](const Projection& object) -> const Projection& {
    auto* p = new Projection(object);
    for (std::string_view f : {"code", "message", "reason"}) {
      p->fields.emplace_back(f, nullptr);
    }
    return *new Projection{{{"type", nullptr}, {"object", p}}, nullptr};
  };
  static const Projection& pod_event = with_status(PodProjectionTree());
  static const Projection& node_event = with_status(NodeProjectionTree());
  return kind == Kind::kPod ? pod_event : node_event;
}

// Copy: the value (as far as the projection reaches) into `out`.
simdjson::error_code Copy(od::value value, const Projection* projection, json& out) {
  od::json_type type;
  if (auto err = value.type().get(type)) {
    return err;
  }
  switch (type) {
    case od::json_type::object: {
      out = json::object();
      od::object object;
      if (auto err = value.get_object().get(object)) {
        return err;
      }
      for (auto field : object) {
        std::string_view key;
        if (auto err = field.unescaped_key().get(key)) {
          return err;
        }
        const Projection* child = nullptr;
        if (projection != nullptr && !projection->fields.empty()) {
          bool wanted = false;
          for (const auto& [name, p] : projection->fields) {
            if (name == key) {
              wanted = true;
              child = p;
              break;
            }
          }
          if (!wanted) {
            continue;  // On-Demand skips the value unread
          }
        }
        json& slot = out[std::string(key)];
        od::value member;
        if (auto err = field.value().get(member)) {
          return err;
        }
        if (auto err = Copy(member, child, slot)) {
          return err;
        }
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      out = json::array();
      od::array array;
      if (auto err = value.get_array().get(array)) {
        return err;
      }
      const Projection* element = projection != nullptr ? projection->element : nullptr;
      for (auto item : array) {
        od::value v;
        if (auto err = item.get(v)) {
          return err;
        }
        json& slot = out.emplace_back();
        if (auto err = Copy(v, element, slot)) {
          return err;
        }
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      if (auto err = value.get_string().get(s)) {
        return err;
      }
      out = std::string(s);
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      od::number_type number_type;
      if (auto err = value.get_number_type().get(number_type)) {
        return err;
      }
      if (number_type == od::number_type::signed_integer) {
        int64_t i = 0;
        auto err = value.get_int64().get(i);
        out = i;
        return err;
      }
      if (number_type == od::number_type::unsigned_integer) {
        uint64_t u = 0;
        auto err = value.get_uint64().get(u);
        out = u;
        return err;
      }
      double d = 0;
      auto err = value.get_double().get(d);
      out = d;
      return err;
    }
    case od::json_type::boolean: {
      bool b = false;
      auto err = value.get_bool().get(b);
      out = b;
      return err;
    }
    case od::json_type::null:
      out = nullptr;
      return value.is_null().error();
  }
  return simdjson::INCORRECT_TYPE;
}

std::string StringAt(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) {
      return "";
    }
    auto it = at->find(key);
    if (it == at->end()) {
      return "";
    }
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

}  // namespace

struct ObjectDecoder::Impl {
  admit::FeatureGates gates;
  od::parser parser;
  std::string buffer;  // the input, copied with the padding simdjson reads past its end

  Result<json> Project(std::string_view input, const Projection& projection,
                       std::string_view what) {
    const size_t padded = input.size() + simdjson::SIMDJSON_PADDING;
    if (buffer.size() < padded) {
      buffer.resize(std::max(padded, buffer.size() * 2));
    }
    std::memcpy(buffer.data(), input.data(), input.size());
    od::document doc;
    if (auto err = parser.iterate(buffer.data(), input.size(), buffer.size()).get(doc)) {
      return Error{std::string(what) + ": " + simdjson::error_message(err)};
    }
    od::value root;
    json out;
    simdjson::error_code err = doc.get_value().get(root);
    if (!err) {
      err = Copy(root, &projection, out);
    }
    // Past the root value, only the end may follow (3.0.1 has no document::at_end).
    if (!err && doc.current_location().error() == simdjson::SUCCESS) {
      err = simdjson::TRAILING_CONTENT;
    }
    if (err) {
      return Error{std::string(what) + ": invalid JSON: " + simdjson::error_message(err)};
    }
    return out;
  }

  Result<PodRecord> PodFrom(const json& projected, const KnownFacts& known) {
    PodRecord record;
    record.resource_version = StringAt(projected, {"metadata", "resourceVersion"});
    record.node_name = StringAt(projected, {"spec", "nodeName"});
    record.phase = StringAt(projected, {"status", "phase"});
    if (known) {
      const std::string uid = StringAt(projected, {"metadata", "uid"});
      if (!uid.empty() && !record.resource_version.empty()) {
        record.facts = known(uid, record.resource_version);
        if (record.facts) {
          return record;
        }
      }
    }
    auto pod = admit::DecodePod(projected, "pod");
    if (!pod.ok()) {
      return pod.error();
    }
    record.facts = admit::MakePodFacts(*pod, gates, /*already_on_node=*/true);
    return record;
  }

  Result<NodeRecord> NodeFrom(const json& projected) {
    auto node = admit::DecodeNode(projected, "node");
    if (!node.ok()) {
      return node.error();
    }
    NodeRecord record;
    record.node = std::make_shared<const admit::Node>(std::move(node).value());
    record.resource_version = StringAt(projected, {"metadata", "resourceVersion"});
    return record;
  }
};

ObjectDecoder::ObjectDecoder(admit::FeatureGates gates) : impl_(std::make_unique<Impl>()) {
  impl_->gates = std::move(gates);
}

ObjectDecoder::~ObjectDecoder() = default;

Result<json> ObjectDecoder::PodProjection(std::string_view input) {
  return impl_->Project(input, PodProjectionTree(), "pod");
}

Result<PodRecord> ObjectDecoder::Pod(std::string_view input, const KnownFacts& known) {
  auto projected = impl_->Project(input, PodProjectionTree(), "pod");
  if (!projected.ok()) {
    return projected.error();
  }
  return impl_->PodFrom(*projected, known);
}

Result<NodeRecord> ObjectDecoder::Node(std::string_view input) {
  auto projected = impl_->Project(input, NodeProjectionTree(), "node");
  if (!projected.ok()) {
    return projected.error();
  }
  return impl_->NodeFrom(*projected);
}

Result<WatchEvent> ObjectDecoder::Event(std::string_view line, Kind kind, const KnownFacts& known) {
  auto projected = impl_->Project(line, EventProjectionTree(kind), "watch event");
  if (!projected.ok()) {
    return projected.error();
  }
  if (!projected->is_object()) {
    return Error{"watch event is not an object"};
  }
  const std::string type = StringAt(*projected, {"type"});
  auto object = projected->find("object");
  if (object == projected->end() || !object->is_object()) {
    return Error{"watch event without an object"};
  }
  WatchEvent event;
  if (type == "ERROR") {
    event.type = WatchEvent::Type::kError;
    auto code = object->find("code");
    event.error_code = code != object->end() && code->is_number_integer() ? code->get<int>() : 0;
    event.error_message = StringAt(*object, {"message"});
    return event;
  }
  event.resource_version = StringAt(*object, {"metadata", "resourceVersion"});
  if (type == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
    return event;
  }
  if (type == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else {
    return Error{"watch: unknown event type \"" + type + "\""};
  }
  if (kind == Kind::kPod) {
    // A deletion is always decoded afresh: its object is the pod's last state.
    auto pod = impl_->PodFrom(*object, event.type == WatchEvent::Type::kDeleted ? nullptr : known);
    if (pod.ok()) {
      event.pod = std::move(pod).value();
    } else {
      event.unreadable = pod.error().message;
    }
  } else {
    auto node = impl_->NodeFrom(*object);
    if (node.ok()) {
      event.node = std::move(node).value();
    } else {
      event.unreadable = node.error().message;
    }
  }
  return event;
}

PodRecord PodRecordOf(const admit::Pod& pod, const admit::FeatureGates& gates,
                      std::string resource_version) {
  PodRecord record;
  record.facts = admit::MakePodFacts(pod, gates, /*already_on_node=*/true);
  record.node_name = pod.node_name;
  record.phase = pod.phase;
  record.resource_version = std::move(resource_version);
  return record;
}

}  // namespace nodegate::kube
