#include "explain/cluster/read.h"

#include <functional>

#include "kube/decode/list_stream.h"

namespace nodegate::explain {
namespace {

constexpr size_t kMaxObjectBytes = 16u << 20;

// What each read needs, said when the API server refuses it.
std::string Hint(int status) {
  if (status == 401) {
    return " (the credentials were refused: check the kubeconfig's user or the token)";
  }
  if (status == 403) {
    return " (nodegate explain needs get and list on pods and nodes, and get on daemonsets)";
  }
  return "";
}

// ListAll: every item of a collection, page after page.
Result<admit::Ok> ListAll(kube::ApiClient& client, const std::string& path, const std::string& what,
                          const ReadOptions& options,
                          const std::function<void(std::string_view)>& on_item) {
  std::string continue_token;
  bool first = true;
  do {
    std::string target = path + "?limit=" + std::to_string(options.page_size);
    if (first) {
      target += "&resourceVersion=0";  // the watch cache, as a reflector's first list
    } else {
      target += "&continue=" + kube::UrlEncode(continue_token);
    }
    first = false;
    kube::ListStream list(on_item);
    std::optional<Error> broken;
    auto got = client.Stream(
        target, options.timeout, [](const kube::StreamHead& head) { return head.status == 200; },
        [&](std::string_view bytes) {
          if (auto fed = list.Feed(bytes); !fed.ok()) {
            broken = fed.error();
            return false;
          }
          return true;
        });
    if (!got.ok()) {
      return Error{"list " + what + ": " + got.error().message};
    }
    if (got->status != 200) {
      return Error{kube::StatusMessage("list " + what, got->status, got->body) + Hint(got->status)};
    }
    if (got->idle) {
      return Error{"list " + what + ": nothing arrived for " +
                   std::to_string(options.timeout.count() / 1000) + " s"};
    }
    if (broken) {
      return Error{"list " + what + ": " + broken->message};
    }
    if (auto done = list.Finish(); !done.ok()) {
      return Error{"list " + what + ": " + done.error().message};
    }
    continue_token = list.continue_token();
  } while (!continue_token.empty());
  return admit::Ok{};
}

}  // namespace

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + kube::UrlEncode(ns) + "/pods/" + kube::UrlEncode(name);
}

std::string DaemonSetPath(const std::string& ns, const std::string& name) {
  return "/apis/apps/v1/namespaces/" + kube::UrlEncode(ns) + "/daemonsets/" + kube::UrlEncode(name);
}

Result<Cluster> ReadCluster(kube::ApiClient& client, const ReadOptions& options) {
  Cluster cluster;
  cluster.TrackOwner(options.track_owner);
  kube::ObjectDecoder decoder(options.gates);
  size_t bad_nodes = 0;
  std::string first_bad_node;
  auto nodes = ListAll(client, "/api/v1/nodes", "nodes", options, [&](std::string_view item) {
    auto node = decoder.Node(item);
    if (node.ok()) {
      cluster.AddNode(std::move(node->node));
    } else if (bad_nodes++ == 0) {
      first_bad_node = node.error().message;
    }
  });
  if (!nodes.ok()) {
    return nodes.error();
  }
  if (bad_nodes > 0) {
    // A node nodegate cannot read would be a node it says nothing about: refuse to guess.
    return Error{"list nodes: " + std::to_string(bad_nodes) +
                 " node(s) could not be read; the first: " + first_bad_node};
  }
  auto pods = ListAll(client, "/api/v1/pods", "pods", options, [&](std::string_view item) {
    auto pod = decoder.Pod(item);
    if (!pod.ok()) {
      cluster.CountUnreadable(pod.error().message);
      return;
    }
    const bool unbound = pod->node_name.empty() && !pod->Terminal();
    cluster.AddPod(std::move(pod).value());
    if (unbound) {
      // Pending pods are few, and what explain places: kept whole.
      nlohmann::json object = nlohmann::json::parse(item, nullptr, /*allow_exceptions=*/false);
      if (object.is_object()) {
        cluster.AddUnbound(std::move(object));
      }
    }
  });
  if (!pods.ok()) {
    return pods.error();
  }
  return cluster;
}

Result<std::optional<nlohmann::json>> GetObject(kube::ApiClient& client, const std::string& path,
                                                const std::string& what,
                                                std::chrono::milliseconds timeout) {
  auto got = client.Get(path, kube::Clock::now() + timeout, kMaxObjectBytes);
  if (!got.ok()) {
    return Error{"get " + what + ": " + got.error().message};
  }
  if (got->status == 404) {
    return std::optional<nlohmann::json>();
  }
  if (got->status != 200) {
    return Error{kube::StatusMessage("get " + what, got->status, got->body) + Hint(got->status)};
  }
  nlohmann::json object = nlohmann::json::parse(got->body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    return Error{"get " + what + ": the answer is not a JSON object"};
  }
  return std::optional<nlohmann::json>(std::move(object));
}

}  // namespace nodegate::explain
