#include "ipam/cluster/plugin.h"

#include <sys/stat.h>

#include <chrono>
#include <optional>

#include "ipam/cluster/allocator.h"
#include "ipam/cluster/config.h"
#include "ipam/resolv_conf.h"
#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/etcd/client.h"
#include "lib/sys/dir_io.h"
#include "lib/sys/file_lock.h"

namespace nodegate::ipam::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// The config, the node lock and a client whose deadline is the verb's: etcd.timeout from the
// call's start. Members are destroyed in reverse: the client's work ends before the lock goes.
struct Session {
  ClusterConfig cfg;
  std::optional<sys::FileLock> node_lock;
  std::unique_ptr<etcd::Client> owned_client;  // the exec'd plugin's
  etcd::Client* client = nullptr;
  ViewCache* views = nullptr;  // the agent's
  int requests_before = 0;     // a kept client's count when this verb began
};

// One verb of a node at a time, on this machine: <lockDir>/<node>.lock. The node's name in the
// file's name keeps nodes apart when one machine plays several (the tests, the bench).
Result<sys::FileLock> LockNode(const ClusterConfig& cfg, etcd::Deadline deadline) {
  NG_RETURN_IF_ERROR(sys::MkdirAll(cfg.lock_dir, 0700));
  return sys::FileLock::AcquireUntil(cfg.lock_dir + "/" + cfg.node_name + ".lock", deadline);
}

Result<Session> Open(const PluginEnvironment& env, const cni::CmdArgs& args, Purpose purpose) {
  const auto start = Clock::now();
  Session session;
  NG_ASSIGN_OR_RETURN(session.cfg,
                      LoadClusterConfig(args.conf, args.args, purpose, env.node_sources));
  const etcd::Deadline deadline = start + session.cfg.etcd.timeout;
  NG_ASSIGN_OR_RETURN(session.node_lock, LockNode(session.cfg, deadline));
  const etcd::ClientOptions options = ClientOptionsFor(session.cfg, deadline);
  if (env.clients != nullptr) {
    NG_ASSIGN_OR_RETURN(ClientCache::Kept kept, env.clients->Get(options));
    session.client = kept.client;
    session.views = kept.views;
    session.requests_before = session.client->requests_sent();
  } else {
    NG_ASSIGN_OR_RETURN(session.owned_client, etcd::Client::Create(options));
    session.client = session.owned_client.get();
  }
  return session;
}

void LogCounters(const char* verb, const cni::CmdArgs& args, const Session& session,
                 const Allocator& allocator) {
  const Counters& c = allocator.counters();
  cni::LogDebug(
      "cluster-ipam {} {}/{} node {}: {} requests, {} transactions ({} conflicts), {} "
      "claims, {} borrowed, {} released, last endpoint {}",
      verb, args.container_id, args.ifname, session.cfg.node_name,
      session.client->requests_sent() - session.requests_before, c.transactions, c.conflicts,
      c.claims, c.borrowed, c.released, session.client->current_endpoint());
}

Result<cni::CniResult> Add(const PluginEnvironment& env, const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Session session, Open(env, args, Purpose::kAllocate));
  cni::Dns dns;
  if (!session.cfg.resolv_conf.empty()) {
    NG_ASSIGN_OR_RETURN(dns, ReadResolvConf(session.cfg.resolv_conf));
  }
  Allocator allocator(*session.client, session.cfg);
  allocator.set_view_cache(session.views);
  auto addresses = allocator.Add(args.container_id, args.ifname);
  LogCounters("ADD", args, session, allocator);
  if (!addresses.ok()) return addresses.error();
  return IpamResult(session.cfg.cni_version, *addresses, session.cfg.routes, dns);
}

Status Del(const PluginEnvironment& env, const cni::CmdArgs& args) {
  // Only the name, the node and etcd must be readable: the handle names everything else.
  NG_ASSIGN_OR_RETURN(Session session, Open(env, args, Purpose::kRelease));
  Allocator allocator(*session.client, session.cfg);
  allocator.set_view_cache(session.views);
  Status status = allocator.Release(args.container_id, args.ifname);
  LogCounters("DEL", args, session, allocator);
  return status;
}

Status Check(const PluginEnvironment& env, const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Session session, Open(env, args, Purpose::kAllocate));
  Allocator allocator(*session.client, session.cfg);
  allocator.set_view_cache(session.views);
  return allocator.Check(args.container_id, args.ifname, args.conf.prev_result);
}

Status Gc(const PluginEnvironment& env, const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(std::vector<cni::Attachment> live, cni::ParseValidAttachments(args.conf.raw));
  NG_ASSIGN_OR_RETURN(Session session, Open(env, args, Purpose::kRelease));
  Allocator allocator(*session.client, session.cfg);
  allocator.set_view_cache(session.views);
  Status status = allocator.Gc(live);
  LogCounters("GC", args, session, allocator);
  return status;
}

Status StatusVerb(const PluginEnvironment& env, const cni::CmdArgs& args) {
  auto session = Open(env, args, Purpose::kAllocate);
  if (!session.ok()) {
    return Error(kErrPluginNotAvailable, session.error().msg, session.error().details);
  }
  Allocator allocator(*session->client, session->cfg);
  allocator.set_view_cache(session->views);
  return allocator.Availability();
}

}  // namespace

cni::Plugin MakePlugin() {
  return MakePlugin({.node_sources = NodeNameSources::FromProcess(), .clients = nullptr});
}

cni::Plugin MakePlugin(PluginEnvironment environment) {
  auto env = std::make_shared<const PluginEnvironment>(std::move(environment));
  return cni::SuitePlugin(
      "cluster-ipam", cni::AllVersions(), ConfigShape(),
      {.add = [env](const cni::CmdArgs& args) { return Add(*env, args); },
       .del = [env](const cni::CmdArgs& args) { return Del(*env, args); },
       .check = [env](const cni::CmdArgs& args) { return Check(*env, args); },
       .gc = [env](const cni::CmdArgs& args) { return Gc(*env, args); },
       .status = [env](const cni::CmdArgs& args) { return StatusVerb(*env, args); }});
}

namespace {

// What a kept client depends on besides its options: the TLS files as they are on disk now
// (a rotated certificate gets a new client).
std::string FileStamp(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + ":?";
  return path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

std::string CacheKey(const etcd::ClientOptions& o) {
  std::string key;
  for (const auto& e : o.endpoints) key += e + ",";
  key += "|" + FileStamp(o.tls.ca_file) + "|" + FileStamp(o.tls.cert_file) + "|" +
         FileStamp(o.tls.key_file) + "|" + o.username + "|" + o.password + "|" +
         std::to_string(o.timeout.count()) + "|" + std::to_string(o.dial_timeout.count()) + "|" +
         std::to_string(o.request_timeout.count()) + "|" + std::to_string(o.first_endpoint) + "|" +
         std::to_string(o.max_body);
  return key;
}

// More distinct client configurations than a node has networks means something churns
// (certificates rotated often): start again rather than grow.
constexpr size_t kMaxCachedClients = 16;

}  // namespace

Result<ClientCache::Kept> ClientCache::Get(const etcd::ClientOptions& options) {
  std::string key = CacheKey(options);
  auto it = clients_.find(key);
  if (it == clients_.end()) {
    NG_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, etcd::Client::Create(options));
    if (clients_.size() >= kMaxCachedClients) clients_.clear();
    it = clients_.emplace(std::move(key), Entry{std::move(client), std::make_unique<ViewCache>()})
             .first;
  }
  it->second.client->set_deadline(options.deadline);
  return Kept{it->second.client.get(), it->second.views.get()};
}

}  // namespace nodegate::ipam::cluster
