#include "webhook/state/reflector.h"

#include <iostream>
#include <utility>

#include "admit/api/decode.h"
#include "admit/api/load.h"

namespace nodegate::webhook {
namespace {

using nlohmann::json;

constexpr size_t kMaxListBytes = 1u << 30;
constexpr size_t kMaxNodeReadBytes = 256u << 20;
constexpr int kPageSize = 500;
// Pods that hold something on a node: bound, and neither Succeeded nor Failed.
constexpr std::string_view kBoundPodsSelector =
    "spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<json> ParseJson(std::string_view text, const std::string& where) {
  auto documents = admit::ParseDocuments(text, where);
  if (!documents.ok()) {
    return documents.error();
  }
  return std::move(documents->front().value);
}

// StringMember: a string member, or "" when it is absent or of another type.
std::string StringMember(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string ResourceVersionOf(const json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return "";
  }
  auto rv = metadata->find("resourceVersion");
  return rv != metadata->end() && rv->is_string() ? rv->get<std::string>() : "";
}

// StatusError: the message of a metav1.Status body, or the HTTP status.
std::string StatusError(const std::string& what, int status, const std::string& body) {
  std::string message;
  try {
    const json j = json::parse(body);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) {
      message = j["message"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  return what + ": HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

void Log(std::string_view resource, const std::string& text) {
  std::cerr << "nodegate webhook: " << resource << ": " << text << "\n";
}

}  // namespace

std::string_view ResourceName(Resource resource) {
  return resource == Resource::kNodes ? "nodes" : "pods";
}

std::string ListPath(Resource resource) {
  return resource == Resource::kNodes
             ? "/api/v1/nodes"
             : "/api/v1/pods?fieldSelector=" + std::string(kBoundPodsSelector);
}

Result<std::optional<NodeSnapshot>> ReadNode(kube::ApiClient& client, const std::string& node,
                                             Clock::time_point deadline) {
  auto got = client.Get("/api/v1/nodes/" + UrlEncode(node), deadline, kMaxNodeReadBytes);
  if (!got.ok()) {
    return got.error();
  }
  if (got->status == 404) {
    return std::optional<NodeSnapshot>();
  }
  if (got->status != 200) {
    return Error{StatusError("node " + node, got->status, got->body)};
  }
  auto node_json = ParseJson(got->body, "node " + node);
  if (!node_json.ok()) {
    return node_json.error();
  }
  auto decoded = admit::DecodeNode(*node_json, "node " + node);
  if (!decoded.ok()) {
    return decoded.error();
  }
  NodeSnapshot snapshot;
  snapshot.node = std::move(decoded).value();
  // resourceVersion=0: served from the API server's watch cache, indexed by spec.nodeName.
  auto pods = client.Get(
      "/api/v1/pods?resourceVersion=0&fieldSelector=" + UrlEncode("spec.nodeName=" + node),
      deadline, kMaxNodeReadBytes);
  if (!pods.ok()) {
    return pods.error();
  }
  if (pods->status != 200) {
    return Error{StatusError("pods on node " + node, pods->status, pods->body)};
  }
  auto list = ParseJson(pods->body, "pods on node " + node);
  if (!list.ok()) {
    return list.error();
  }
  auto items = list->find("items");
  if (items != list->end() && items->is_array()) {
    for (const json& item : *items) {
      auto pod = admit::DecodePod(item, "pod");
      if (pod.ok()) {
        snapshot.pods.push_back(std::move(pod).value());
      }
    }
  }
  return std::optional<NodeSnapshot>(std::move(snapshot));
}

Reflector::Reflector(Resource resource, kube::ApiClient& client, NodeStates& states,
                     std::chrono::seconds watch_timeout)
    : resource_(resource), client_(client), states_(states), watch_timeout_(watch_timeout) {}

void Reflector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  client_.Cancel();
  wake_.notify_all();
}

bool Reflector::SleepUnlessStopped(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return !wake_.wait_for(lock, duration, [this] { return stopped_.load(); });
}

Result<std::string> Reflector::List() {
  const std::string base = ListPath(resource_);
  const char* sep = base.find('?') == std::string::npos ? "?" : "&";
  std::vector<admit::Node> nodes;
  std::vector<admit::Pod> pods;
  std::string resource_version;
  std::string continue_token;
  size_t skipped = 0;
  do {
    std::string target = base + sep + "limit=" + std::to_string(kPageSize);
    if (!continue_token.empty()) {
      target += "&continue=" + UrlEncode(continue_token);
    }
    auto got = client_.Get(target, Clock::now() + std::chrono::seconds(60), kMaxListBytes);
    if (!got.ok()) {
      return got.error();
    }
    if (got->status != 200) {
      // 410 on a continue token: the list is too old to finish; start it again.
      return Error{StatusError("list", got->status, got->body)};
    }
    auto list = ParseJson(got->body, std::string(ResourceName(resource_)));
    if (!list.ok()) {
      return list.error();
    }
    resource_version = ResourceVersionOf(*list);
    continue_token.clear();
    if (auto metadata = list->find("metadata"); metadata != list->end() && metadata->is_object()) {
      auto token = metadata->find("continue");
      if (token != metadata->end() && token->is_string()) {
        continue_token = token->get<std::string>();
      }
    }
    auto items = list->find("items");
    if (items != list->end() && items->is_array()) {
      for (const json& item : *items) {
        if (resource_ == Resource::kNodes) {
          auto node = admit::DecodeNode(item, "node");
          node.ok() ? nodes.push_back(std::move(node).value()) : void(++skipped);
        } else {
          auto pod = admit::DecodePod(item, "pod");
          pod.ok() ? pods.push_back(std::move(pod).value()) : void(++skipped);
        }
      }
    }
  } while (!continue_token.empty());
  if (skipped > 0) {
    Log(ResourceName(resource_), std::to_string(skipped) + " object(s) could not be read");
  }
  if (resource_ == Resource::kNodes) {
    states_.ReplaceNodes(std::move(nodes));
  } else {
    states_.ReplacePods(std::move(pods));
  }
  Heard();
  return resource_version;
}

Result<bool> Reflector::Apply(std::string_view line, std::string& resource_version) {
  auto event = ParseJson(line, "watch event");
  if (!event.ok()) {
    return event.error();
  }
  if (!event->is_object()) {
    return Error{"watch event is not an object"};
  }
  const std::string type = StringMember(*event, "type");
  auto object_it = event->find("object");
  if (object_it == event->end() || !object_it->is_object()) {
    return Error{"watch event without an object"};
  }
  const json& object = *object_it;
  Heard();
  if (type == "ERROR") {
    auto code_it = object.find("code");
    const int64_t code =
        code_it != object.end() && code_it->is_number_integer() ? code_it->get<int64_t>() : 0;
    if (code == 410) {
      return false;
    }
    const std::string message = StringMember(object, "message");
    return Error{"watch: " +
                 (message.empty() ? "error event (code " + std::to_string(code) + ")" : message)};
  }
  const std::string rv = ResourceVersionOf(object);
  if (type == "BOOKMARK") {
    if (!rv.empty()) {
      resource_version = rv;
    }
    return true;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
    return Error{"watch: unknown event type \"" + type + "\""};
  }
  if (!rv.empty()) {
    resource_version = rv;
  }
  if (resource_ == Resource::kNodes) {
    auto node = admit::DecodeNode(object, "node");
    if (!node.ok()) {
      Log("nodes", node.error().message);
      return true;
    }
    if (type == "DELETED") {
      states_.DeleteNode(node->name);
    } else {
      states_.UpsertNode(std::move(node).value());
    }
    return true;
  }
  auto pod = admit::DecodePod(object, "pod");
  if (!pod.ok()) {
    Log("pods", pod.error().message);
    return true;
  }
  if (type == "DELETED") {
    states_.DeletePod(*pod);
  } else {
    states_.UpsertPod(std::move(pod).value());
  }
  return true;
}

Result<bool> Reflector::Watch(std::string& resource_version) {
  const std::string base = ListPath(resource_);
  const char* sep = base.find('?') == std::string::npos ? "?" : "&";
  const std::string target = base + sep + "watch=1&allowWatchBookmarks=true&resourceVersion=" +
                             UrlEncode(resource_version) +
                             "&timeoutSeconds=" + std::to_string(watch_timeout_.count());
  bool gone = false;
  std::optional<Error> failed;
  // Without a byte for the watch's own timeout and a minute more, the connection is dead.
  auto status =
      client_.Stream(target, watch_timeout_ + std::chrono::seconds(60), [&](std::string_view line) {
        auto applied = Apply(line, resource_version);
        if (!applied.ok()) {
          failed = applied.error();
          return false;
        }
        gone = !*applied;
        return !gone;
      });
  if (!status.ok()) {
    return status.error();
  }
  if (*status == 410) {
    return true;
  }
  if (*status != 200) {
    return Error{"watch: HTTP " + std::to_string(*status)};
  }
  if (failed) {
    return *failed;
  }
  return gone;
}

void Reflector::Run() {
  const std::string_view name = ResourceName(resource_);
  std::optional<std::string> resource_version;
  std::chrono::milliseconds backoff(1000);
  while (!stopped_) {
    if (!resource_version) {
      auto listed = List();
      if (!listed.ok()) {
        if (stopped_) {
          break;
        }
        Log(name, listed.error().message + "; retrying in " +
                      std::to_string(backoff.count() / 1000.0).substr(0, 4) + " s");
        SleepUnlessStopped(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
        continue;
      }
      resource_version = std::move(listed).value();
      synced_ = true;
      relists_ += 1;
      backoff = std::chrono::milliseconds(1000);
    }
    auto watched = Watch(*resource_version);
    if (stopped_) {
      break;
    }
    if (!watched.ok()) {
      Log(name,
          watched.error().message + "; watching again from resourceVersion " + *resource_version);
      SleepUnlessStopped(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
      continue;
    }
    backoff = std::chrono::milliseconds(1000);
    if (*watched) {
      Log(name, "resourceVersion " + *resource_version + " is gone (410): listing again");
      resource_version.reset();
    }
  }
}

}  // namespace nodegate::webhook
