#include "explain/cluster/read.h"

#include <functional>

#include "kube/decode/decode_worker.h"
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

// ListAll: every item of a collection, page after page, each handed to `on_item` on a thread
// of its own while the next ones arrive (DecodeWorker); all of them when it returns.
Status ListAll(kube::ApiClient& client, const std::string& path, const std::string& what,
               const ReadOptions& options, const std::function<void(std::string_view)>& on_item) {
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
    kube::DecodeWorker worker(on_item);
    kube::ListStream list([&](std::string_view item) { worker.Push(item); });
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
      return got.error().WithContext("list " + what);
    }
    if (got->status != 200) {
      return Error(kErrIo,
                   kube::StatusMessage("list " + what, got->status, got->body) + Hint(got->status));
    }
    if (got->idle) {
      return Error(kErrIo, "list " + what + ": nothing arrived for " +
                               std::to_string(options.timeout.count() / 1000) + " s");
    }
    if (broken) {
      return broken->WithContext("list " + what);
    }
    if (auto done = list.Finish(); !done.ok()) {
      return done.error().WithContext("list " + what);
    }
    worker.Finish();
    continue_token = list.continue_token();
  } while (!continue_token.empty());
  return OkStatus();
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
  auto add_node = [&](std::string_view item) {
    auto node = decoder.Node(item);
    if (node.ok()) {
      cluster.AddNode(std::move(node->node));
    } else if (bad_nodes++ == 0) {
      first_bad_node = node.error().msg;
    }
  };
  NG_RETURN_IF_ERROR(ListAll(client, "/api/v1/nodes", "nodes", options, add_node));
  if (bad_nodes > 0) {
    // A node nodegate cannot read would be a node it says nothing about: refuse to guess.
    return Error(kErrIo, "list nodes: " + std::to_string(bad_nodes) +
                             " node(s) could not be read; the first: " + first_bad_node);
  }
  auto add_pod = [&](std::string_view item) {
    auto pod = decoder.Pod(item);
    if (!pod.ok()) {
      cluster.CountUnreadable(pod.error().msg);
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
  };
  NG_RETURN_IF_ERROR(ListAll(client, "/api/v1/pods", "pods", options, add_pod));
  return cluster;
}

Result<std::optional<nlohmann::json>> GetObject(kube::ApiClient& client, const std::string& path,
                                                const std::string& what,
                                                std::chrono::milliseconds timeout) {
  auto got = client.Get(path, kube::Clock::now() + timeout, kMaxObjectBytes);
  if (!got.ok()) {
    return got.error().WithContext("get " + what);
  }
  if (got->status == 404) {
    return std::optional<nlohmann::json>();
  }
  if (got->status != 200) {
    return Error(kErrIo,
                 kube::StatusMessage("get " + what, got->status, got->body) + Hint(got->status));
  }
  nlohmann::json object = nlohmann::json::parse(got->body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    return Error(kErrIo, "get " + what + ": the answer is not a JSON object");
  }
  return std::optional<nlohmann::json>(std::move(object));
}

}  // namespace nodegate::explain
