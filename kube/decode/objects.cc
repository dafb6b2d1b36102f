#include "kube/decode/objects.h"

#include <simdjson.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "admit/api/decode.h"
#include "admit/check/pod_facts.h"
#include "lib/base/result.h"
#include "lib/json/field.h"

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
  // Only the required anti-affinity of a pod on a node can reject another pod there (the
  // scheduler's InterPodAffinity Filter): kept so that `explain` can say when it might.
  static const Projection& anti_affinity =
      Fields({{"requiredDuringSchedulingIgnoredDuringExecution", nullptr}});
  static const Projection& affinity = Fields({{"podAntiAffinity", &anti_affinity}});
  static const Projection& spec = Fields({{"nodeName", nullptr},
                                          {"hostNetwork", nullptr},
                                          {"containers", &Each(container)},
                                          {"initContainers", &Each(container)},
                                          {"overhead", nullptr},
                                          {"resources", nullptr},
                                          {"priority", nullptr},
                                          {"priorityClassName", nullptr},
                                          {"affinity", &affinity}});
  static const Projection& status = Fields({{"phase", nullptr},
                                            {"qosClass", nullptr},
                                            {"startTime", nullptr},
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
simdjson::error_code Copy(od::value value, const Projection* projection, json& out);

// ChildOf: the projection of member `key`; false when the projection leaves it out.
bool ChildOf(const Projection* projection, std::string_view key, const Projection*& child) {
  child = nullptr;
  if (projection == nullptr || projection->fields.empty()) {
    return true;
  }
  for (const auto& [name, p] : projection->fields) {
    if (name == key) {
      child = p;
      return true;
    }
  }
  return false;
}

simdjson::error_code CopyObject(od::value value, const Projection* projection, json& out) {
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
    if (!ChildOf(projection, key, child)) {
      continue;  // On-Demand skips the value unread
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

simdjson::error_code CopyArray(od::value value, const Projection* projection, json& out) {
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

simdjson::error_code CopyNumber(od::value value, json& out) {
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

simdjson::error_code Copy(od::value value, const Projection* projection, json& out) {
  od::json_type type;
  if (auto err = value.type().get(type)) {
    return err;
  }
  switch (type) {
    case od::json_type::object:
      return CopyObject(value, projection, out);
    case od::json_type::array:
      return CopyArray(value, projection, out);
    case od::json_type::string: {
      std::string_view s;
      if (auto err = value.get_string().get(s)) {
        return err;
      }
      out = std::string(s);
      return simdjson::SUCCESS;
    }
    case od::json_type::number:
      return CopyNumber(value, out);
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

using json_field::StringAt;

// RequiredAntiAffinity: spec.affinity.podAntiAffinity.requiredDuringScheduling... when it is a
// non-empty list, else null.
const json* RequiredAntiAffinity(const json& pod) {
  const json* at = json_field::MemberAt(pod, {"spec", "affinity", "podAntiAffinity",
                                              "requiredDuringSchedulingIgnoredDuringExecution"});
  return at != nullptr && at->is_array() && !at->empty() ? at : nullptr;
}

}  // namespace

// Identity: what differs between pods of one template and is read for every pod.
struct Identity {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  std::string owner_kind;
  std::string owner_name;
  std::string node_name;
  std::string phase;
  std::string start_time;
  std::string anti_affinity;  // raw JSON text of the required anti-affinity terms
};

// Fast: what a pod holds on a node comes from few members (its containers, overhead, pod-level
// resources, priority, hostNetwork, QoS class, the resources its containers report, the static
// and mirror annotations), and the pods of one controller have the same ones. The fast walk
// gathers those members' raw text as the template's key and the identity apart; a template
// seen before gives its facts with this pod's identity, and anything unusual (a member of an
// unexpected type or repeated, a template not seen yet) is left to the full path, whose
// verdict is then remembered. Equal raw text is equal content, so both paths agree.
class FastPath {
 public:
  // Walk: the key and the identity, or false for the full path.
  static bool Walk(od::document& doc, std::string& key, Identity& id) {
    od::object root;
    if (doc.get_object().get(root)) {
      return false;
    }
    bool seen_metadata = false;
    bool seen_spec = false;
    bool seen_status = false;
    for (auto field : root) {
      std::string_view name;
      od::value value;
      if (field.unescaped_key().get(name) || field.value().get(value)) {
        return false;
      }
      if (name == "metadata") {
        if (seen_metadata || !Metadata(value, key, id)) {
          return false;
        }
        seen_metadata = true;
      } else if (name == "spec") {
        if (seen_spec || !Spec(value, key, id)) {
          return false;
        }
        seen_spec = true;
      } else if (name == "status") {
        if (seen_status || !Status(value, key, id)) {
          return false;
        }
        seen_status = true;
      }
    }
    // Past the root value, only the end may follow.
    return doc.current_location().error() != simdjson::SUCCESS && seen_spec && !id.name.empty();
  }

 private:
  // Raw: a value's JSON text, appended to the key under its name.
  static bool Raw(od::value value, std::string_view name, std::string& key) {
    od::json_type type;
    if (value.type().get(type)) {
      return false;
    }
    std::string_view raw;
    simdjson::error_code err = simdjson::SUCCESS;
    if (type == od::json_type::object) {
      od::object o;
      err = value.get_object().get(o);
      if (!err) {
        err = o.raw_json().get(raw);
      }
    } else if (type == od::json_type::array) {
      od::array a;
      err = value.get_array().get(a);
      if (!err) {
        err = a.raw_json().get(raw);
      }
    } else {
      raw = value.raw_json_token();
    }
    if (err) {
      return false;
    }
    key.append(name).push_back('=');
    key.append(raw);
    key.push_back('\x1f');
    return true;
  }

  static bool String(od::value value, std::string& out) {
    std::string_view s;
    if (value.get_string().get(s)) {
      return false;
    }
    out.assign(s);
    return true;
  }

  // Annotations: the static and mirror annotations, into the key.
  static bool Annotations(od::value v, std::string& key) {
    od::object annotations;
    if (v.get_object().get(annotations)) {
      return false;
    }
    for (auto a : annotations) {
      std::string_view k;
      od::value av;
      if (a.unescaped_key().get(k) || a.value().get(av)) {
        return false;
      }
      if (k == admit::kAnnotationConfigSource || k == admit::kAnnotationConfigMirror) {
        std::string text;
        if (!String(av, text)) {
          return false;
        }
        key.append(k).push_back('=');
        key.append(text);
        key.push_back('\x1f');
      }
    }
    return true;
  }

  // OwnerReference: one reference's kind, name and controller flag.
  static bool OwnerReference(od::object ref, std::string& kind, std::string& owner,
                             bool& controller) {
    for (auto rf : ref) {
      std::string_view rk;
      od::value rv;
      if (rf.unescaped_key().get(rk) || rf.value().get(rv)) {
        return false;
      }
      if (rk == "controller") {
        od::json_type t;
        if (rv.type().get(t)) {
          return false;
        }
        if (t == od::json_type::null) {
          continue;
        }
        if (rv.get_bool().get(controller)) {
          return false;
        }
      } else if (rk == "kind") {
        if (!String(rv, kind)) return false;
      } else if (rk == "name") {
        if (!String(rv, owner)) return false;
      }
    }
    return true;
  }

  // Controller: the first ownerReference marked controller, into the identity.
  static bool Controller(od::value v, Identity& id) {
    od::array refs;
    if (v.get_array().get(refs)) {
      return false;
    }
    bool found = false;
    for (auto element : refs) {
      od::object ref;
      if (element.get_object().get(ref)) {
        return false;
      }
      if (found) {
        continue;  // after the controller admit's decoder reads no further
      }
      std::string kind;
      std::string owner;
      bool controller = false;
      if (!OwnerReference(ref, kind, owner, controller)) {
        return false;
      }
      if (controller) {
        id.owner_kind = std::move(kind);
        id.owner_name = std::move(owner);
        found = true;
      }
    }
    return true;
  }

  static bool Metadata(od::value value, std::string& key, Identity& id) {
    od::object meta;
    if (value.get_object().get(meta)) {
      return false;
    }
    std::vector<std::string_view> seen;
    for (auto field : meta) {
      std::string_view name;
      od::value v;
      if (field.unescaped_key().get(name) || field.value().get(v)) {
        return false;
      }
      for (std::string_view s : seen) {
        if (s == name) {
          return false;  // a repeated member: the full path says what it means
        }
      }
      if (name == "name" || name == "namespace" || name == "uid" || name == "resourceVersion" ||
          name == "creationTimestamp" || name == "annotations" || name == "ownerReferences") {
        seen.push_back(name);
      }
      std::string ignored;
      if (name == "name") {
        if (!String(v, id.name)) return false;
      } else if (name == "namespace") {
        if (!String(v, id.ns)) return false;
      } else if (name == "uid") {
        if (!String(v, id.uid)) return false;
      } else if (name == "resourceVersion") {
        if (!String(v, id.resource_version)) return false;
      } else if (name == "creationTimestamp") {
        if (!String(v, ignored)) return false;
      } else if (name == "annotations") {
        if (!Annotations(v, key)) return false;
      } else if (name == "ownerReferences") {
        if (!Controller(v, id)) return false;
      }
    }
    return true;
  }

  // Containers: what admit reads of each container, into the key; their volume mounts name the
  // pod's own service account volume, different in every pod.
  static bool Containers(od::value v, std::string_view name, std::string& key) {
    od::array list;
    if (v.get_array().get(list)) {
      return false;
    }
    key.append(name).append("=[");
    for (auto element : list) {
      od::object c;
      if (element.get_object().get(c)) {
        return false;
      }
      key.push_back('{');
      for (auto cf : c) {
        std::string_view ck;
        od::value cv;
        if (cf.unescaped_key().get(ck) || cf.value().get(cv)) {
          return false;
        }
        if ((ck == "name" || ck == "ports" || ck == "resources" || ck == "restartPolicy") &&
            !Raw(cv, ck, key)) {
          return false;
        }
      }
      key.push_back('}');
    }
    key.append("]\x1f");
    return true;
  }

  // AntiAffinityTerms: the raw terms of podAntiAffinity's required list, into the identity.
  static bool AntiAffinityTerms(od::value v, Identity& id) {
    od::object affinity;
    if (v.get_object().get(affinity)) {
      return false;
    }
    for (auto a : affinity) {
      std::string_view k;
      od::value av;
      if (a.unescaped_key().get(k) || a.value().get(av)) {
        return false;
      }
      if (k != "podAntiAffinity") {
        continue;
      }
      od::object anti;
      if (av.get_object().get(anti)) {
        return false;
      }
      for (auto t : anti) {
        std::string_view tk;
        od::value tv;
        if (t.unescaped_key().get(tk) || t.value().get(tv)) {
          return false;
        }
        if (tk == "requiredDuringSchedulingIgnoredDuringExecution") {
          std::string raw;
          if (!Raw(tv, "", raw)) {
            return false;
          }
          id.anti_affinity = raw.substr(1, raw.size() - 2);
        }
      }
    }
    return true;
  }

  static bool Spec(od::value value, std::string& key, Identity& id) {
    od::object spec;
    if (value.get_object().get(spec)) {
      return false;
    }
    std::vector<std::string_view> seen;
    for (auto field : spec) {
      std::string_view name;
      od::value v;
      if (field.unescaped_key().get(name) || field.value().get(v)) {
        return false;
      }
      const bool containers = name == "containers" || name == "initContainers";
      const bool keyed = containers || name == "hostNetwork" || name == "overhead" ||
                         name == "resources" || name == "priority" || name == "priorityClassName";
      if (keyed || name == "nodeName" || name == "affinity") {
        for (std::string_view s : seen) {
          if (s == name) {
            return false;
          }
        }
        seen.push_back(name);
      }
      if (containers) {
        if (!Containers(v, name, key)) {
          return false;
        }
      } else if (keyed) {
        if (!Raw(v, name, key)) {
          return false;
        }
      } else if (name == "nodeName") {
        if (!String(v, id.node_name)) {
          return false;
        }
      } else if (name == "affinity") {
        if (!AntiAffinityTerms(v, id)) {
          return false;
        }
      }
    }
    return true;
  }

  static bool Status(od::value value, std::string& key, Identity& id) {
    od::object status;
    if (value.get_object().get(status)) {
      return false;
    }
    std::vector<std::string_view> seen;
    for (auto field : status) {
      std::string_view name;
      od::value v;
      if (field.unescaped_key().get(name) || field.value().get(v)) {
        return false;
      }
      if (name == "phase" || name == "startTime" || name == "qosClass" ||
          name == "containerStatuses" || name == "initContainerStatuses") {
        for (std::string_view s : seen) {
          if (s == name) {
            return false;
          }
        }
        seen.push_back(name);
      }
      if (name == "phase") {
        if (!String(v, id.phase)) return false;
      } else if (name == "startTime") {
        if (!String(v, id.start_time)) return false;
      } else if (name == "qosClass") {
        if (!Raw(v, name, key)) return false;
      } else if (name == "containerStatuses" || name == "initContainerStatuses") {
        // Only what the resources of a running container are: the rest changes all the time.
        od::array statuses;
        if (v.get_array().get(statuses)) {
          return false;
        }
        key.append(name).append("=[");
        for (auto element : statuses) {
          od::object cs;
          if (element.get_object().get(cs)) {
            return false;
          }
          key.push_back('{');
          for (auto c : cs) {
            std::string_view ck;
            od::value cv;
            if (c.unescaped_key().get(ck) || c.value().get(cv)) {
              return false;
            }
            if (ck == "name" || ck == "allocatedResources") {
              if (!Raw(cv, ck, key)) return false;
            } else if (ck == "resources") {
              od::object r;
              if (cv.get_object().get(r)) {
                return false;
              }
              for (auto rf : r) {
                std::string_view rk;
                od::value rv;
                if (rf.unescaped_key().get(rk) || rf.value().get(rv)) {
                  return false;
                }
                if (rk == "requests" && !Raw(rv, "resources.requests", key)) {
                  return false;
                }
              }
            }
          }
          key.push_back('}');
        }
        key.append("]\x1f");
      }
    }
    return true;
  }
};

// Templates kept at most: the controllers of a large cluster, with room to spare; when full,
// it starts again (a miss costs the full path once).
constexpr size_t kMaxTemplates = 8192;

struct ObjectDecoder::Impl {
  admit::FeatureGates gates;
  od::parser parser;
  std::string buffer;  // the input, copied with the padding simdjson reads past its end
  std::unordered_map<std::string, admit::PodFactsPtr> templates;
  std::string key;  // the template key of the pod being read (reused)

  void Load(std::string_view input) {
    const size_t padded = input.size() + simdjson::SIMDJSON_PADDING;
    if (buffer.size() < padded) {
      buffer.resize(std::max(padded, buffer.size() * 2));
    }
    std::memcpy(buffer.data(), input.data(), input.size());
  }

  // FastPod: the record from a template seen before, or nullopt (the full path, which
  // remembers its facts under `key` when `key` is not empty afterwards).
  std::optional<PodRecord> FastPod(std::string_view input, const KnownFacts& known) {
    key.clear();
    Load(input);
    od::document doc;
    Identity id;
    if (parser.iterate(buffer.data(), input.size(), buffer.size()).get(doc) ||
        !FastPath::Walk(doc, key, id)) {
      key.clear();
      return std::nullopt;
    }
    PodRecord record;
    record.resource_version = std::move(id.resource_version);
    record.node_name = std::move(id.node_name);
    record.phase = std::move(id.phase);
    if (!id.anti_affinity.empty()) {
      const json terms = json::parse(id.anti_affinity, nullptr, /*allow_exceptions=*/false);
      if (terms.is_array() && !terms.empty()) {
        record.required_anti_affinity = terms.dump();
      }
    }
    if (known && !id.uid.empty() && !record.resource_version.empty()) {
      record.facts = known(id.uid, record.resource_version);
      if (record.facts) {
        key.clear();
        return record;
      }
    }
    auto it = templates.find(key);
    if (it == templates.end()) {
      return std::nullopt;
    }
    auto facts = std::make_shared<admit::PodFacts>(*it->second);
    const std::string ns = id.ns.empty() ? "default" : id.ns;
    facts->key = ns + "/" + id.name;
    facts->uid = std::move(id.uid);
    facts->source.clear();
    facts->owner = admit::InternText(
        id.owner_name.empty() ? "" : id.owner_kind + " " + ns + "/" + id.owner_name);
    facts->start_time = admit::StartTimeSeconds(id.start_time);
    record.facts = std::move(facts);
    key.clear();
    return record;
  }

  void Remember(const admit::PodFactsPtr& facts) {
    if (key.empty()) {
      return;
    }
    if (templates.size() >= kMaxTemplates) {
      templates.clear();
    }
    templates.emplace(std::move(key), facts);
    key.clear();
  }

  Result<json> Project(std::string_view input, const Projection& projection,
                       std::string_view what) {
    Load(input);
    od::document doc;
    if (auto err = parser.iterate(buffer.data(), input.size(), buffer.size()).get(doc)) {
      return Error(kErrDecode, std::string(what) + ": " + simdjson::error_message(err));
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
      return Error(kErrDecode,
                   std::string(what) + ": invalid JSON: " + simdjson::error_message(err));
    }
    return out;
  }

  Result<PodRecord> PodFrom(const json& projected, const KnownFacts& known) {
    PodRecord record;
    record.resource_version = StringAt(projected, {"metadata", "resourceVersion"});
    record.node_name = StringAt(projected, {"spec", "nodeName"});
    record.phase = StringAt(projected, {"status", "phase"});
    if (const json* terms = RequiredAntiAffinity(projected)) {
      record.required_anti_affinity = terms->dump();
    }
    if (known) {
      const std::string uid = StringAt(projected, {"metadata", "uid"});
      if (!uid.empty() && !record.resource_version.empty()) {
        record.facts = known(uid, record.resource_version);
        if (record.facts) {
          return record;
        }
      }
    }
    NG_ASSIGN_OR_RETURN(auto pod, admit::DecodePod(projected, "pod"));
    record.facts = admit::MakePodFacts(pod, gates, /*already_on_node=*/true);
    return record;
  }

  Result<NodeRecord> NodeFrom(const json& projected) {
    NG_ASSIGN_OR_RETURN(auto node, admit::DecodeNode(projected, "node"));
    NodeRecord record;
    record.node = std::make_shared<const admit::Node>(std::move(node));
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
  if (std::optional<PodRecord> fast = impl_->FastPod(input, known)) {
    return std::move(*fast);
  }
  const bool remember = !impl_->key.empty();
  std::string key = std::move(impl_->key);
  NG_ASSIGN_OR_RETURN(auto projected, impl_->Project(input, PodProjectionTree(), "pod"));
  auto record = impl_->PodFrom(projected, known);
  if (record.ok() && remember) {
    impl_->key = std::move(key);
    impl_->Remember(record->facts);
  }
  return record;
}

Result<NodeRecord> ObjectDecoder::Node(std::string_view input) {
  NG_ASSIGN_OR_RETURN(auto projected, impl_->Project(input, NodeProjectionTree(), "node"));
  return impl_->NodeFrom(projected);
}

Result<WatchEvent> ObjectDecoder::Event(std::string_view line, Kind kind, const KnownFacts& known) {
  NG_ASSIGN_OR_RETURN(auto projected,
                      impl_->Project(line, EventProjectionTree(kind), "watch event"));
  if (!projected.is_object()) {
    return Error(kErrDecode, "watch event is not an object");
  }
  const std::string type = StringAt(projected, {"type"});
  auto object = projected.find("object");
  if (object == projected.end() || !object->is_object()) {
    return Error(kErrDecode, "watch event without an object");
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
    return Error(kErrDecode, "watch: unknown event type \"" + type + "\"");
  }
  if (kind == Kind::kPod) {
    // A deletion is always decoded afresh: its object is the pod's last state.
    auto pod = impl_->PodFrom(*object, event.type == WatchEvent::Type::kDeleted ? nullptr : known);
    if (pod.ok()) {
      event.pod = std::move(pod).value();
    } else {
      event.unreadable = pod.error().msg;
    }
  } else {
    auto node = impl_->NodeFrom(*object);
    if (node.ok()) {
      event.node = std::move(node).value();
    } else {
      event.unreadable = node.error().msg;
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
