#pragma once
// The cluster-ipam executable's verbs (ADD, DEL, CHECK, GC, STATUS; VERSION is the
// dispatcher's): each loads the config, takes the node lock (one verb of a node at a time, as
// Calico's IPAM lock: ten ADDs at once on one node would otherwise fight over its block), gets
// an etcd client whose deadline is the verb's (etcd.timeout from the start of the call) and
// runs the Allocator (allocator.h).
//
// The same verbs run in the exec'd plugin (a client of its own per call) and in the node's
// agent (agent.h: warm clients from a ClientCache, the node name's sources as the plugin
// forwarded them), so both paths give the same answers.

#include <map>
#include <memory>
#include <string>

#include "ipam/cluster/allocator.h"
#include "ipam/cluster/config.h"
#include "lib/base/result.h"
#include "lib/cni/skel.h"
#include "lib/etcd/client.h"

namespace nodegate::ipam::cluster {

// etcd clients kept across calls, one per distinct client configuration (endpoints,
// certificates as they are on disk now, credentials, timeouts). Not thread-safe: the agent
// runs one verb at a time.
class ClientCache {
 public:
  struct Kept {
    etcd::Client* client;
    ViewCache* views;  // the nodes' views read through this client (allocator.h)
  };
  // A client for `options` with its deadline set to options.deadline; an earlier call's
  // client (and its open connection, and its views) when nothing it depends on changed, a new
  // one otherwise.
  Result<Kept> Get(const etcd::ClientOptions& options);
  size_t size() const { return clients_.size(); }

 private:
  struct Entry {
    std::unique_ptr<etcd::Client> client;
    std::unique_ptr<ViewCache> views;
  };
  std::map<std::string, Entry> clients_;
};

// What a verb takes from outside its config.
struct PluginEnvironment {
  // Where nodeName comes from when the config has none.
  NodeNameSources node_sources;
  // The agent's clients; null: one client per call, closed at its end (the exec'd plugin).
  ClientCache* clients = nullptr;
};

// The exec'd plugin: the node name's sources from this process, a client per call.
cni::Plugin MakePlugin();
cni::Plugin MakePlugin(PluginEnvironment environment);

}  // namespace nodegate::ipam::cluster
