#include "ipam/cluster/plugin.h"

#include <chrono>

#include "ipam/cluster/allocator.h"
#include "ipam/cluster/config.h"
#include "ipam/resolv_conf.h"
#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/etcd/client.h"

namespace nodegate::ipam::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// The config and a client whose deadline is the verb's: etcd.timeout from the call's start.
struct Session {
  ClusterConfig cfg;
  std::unique_ptr<etcd::Client> client;
};

Result<Session> Open(const cni::CmdArgs& args, Purpose purpose) {
  const auto start = Clock::now();
  Session session;
  NG_ASSIGN_OR_RETURN(session.cfg, LoadClusterConfig(args.conf, args.args, purpose,
                                                     NodeNameSources::FromProcess()));
  NG_ASSIGN_OR_RETURN(session.client, etcd::Client::Create(ClientOptionsFor(
                                          session.cfg, start + session.cfg.etcd.timeout)));
  return session;
}

void LogCounters(const char* verb, const cni::CmdArgs& args, const Session& session,
                 const Allocator& allocator) {
  const Counters& c = allocator.counters();
  cni::LogDebug(
      "cluster-ipam {} {}/{} node {}: {} requests, {} transactions ({} conflicts), {} "
      "claims, {} borrowed, {} released, last endpoint {}",
      verb, args.container_id, args.ifname, session.cfg.node_name, session.client->requests_sent(),
      c.transactions, c.conflicts, c.claims, c.borrowed, c.released,
      session.client->current_endpoint());
}

Result<cni::CniResult> Add(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Session session, Open(args, Purpose::kAllocate));
  cni::Dns dns;
  if (!session.cfg.resolv_conf.empty()) {
    NG_ASSIGN_OR_RETURN(dns, ReadResolvConf(session.cfg.resolv_conf));
  }
  Allocator allocator(*session.client, session.cfg);
  auto addresses = allocator.Add(args.container_id, args.ifname);
  LogCounters("ADD", args, session, allocator);
  if (!addresses.ok()) return addresses.error();
  return IpamResult(session.cfg.cni_version, *addresses, session.cfg.routes, dns);
}

Status Del(const cni::CmdArgs& args) {
  // Only the name, the node and etcd must be readable: the handle names everything else.
  NG_ASSIGN_OR_RETURN(Session session, Open(args, Purpose::kRelease));
  Allocator allocator(*session.client, session.cfg);
  Status status = allocator.Release(args.container_id, args.ifname);
  LogCounters("DEL", args, session, allocator);
  return status;
}

Status Check(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Session session, Open(args, Purpose::kAllocate));
  Allocator allocator(*session.client, session.cfg);
  return allocator.Check(args.container_id, args.ifname, args.conf.prev_result);
}

Status Gc(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(std::vector<cni::Attachment> live, cni::ParseValidAttachments(args.conf.raw));
  NG_ASSIGN_OR_RETURN(Session session, Open(args, Purpose::kRelease));
  Allocator allocator(*session.client, session.cfg);
  Status status = allocator.Gc(live);
  LogCounters("GC", args, session, allocator);
  return status;
}

Status StatusVerb(const cni::CmdArgs& args) {
  auto session = Open(args, Purpose::kAllocate);
  if (!session.ok()) {
    return Error(kErrPluginNotAvailable, session.error().msg, session.error().details);
  }
  Allocator allocator(*session->client, session->cfg);
  return allocator.Availability();
}

}  // namespace

cni::Plugin MakePlugin() {
  return cni::SuitePlugin("cluster-ipam", cni::AllVersions(), ConfigShape(),
                          {.add = Add, .del = Del, .check = Check, .gc = Gc, .status = StatusVerb});
}

}  // namespace nodegate::ipam::cluster
