// `nodegate ipam`: flags, the network's configuration, tables and JSON. The logic is in
// ipam/cluster/admin.h.

#include "cmd/nodegate/ipam/cli.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "ipam/cluster/admin.h"
#include "ipam/cluster/config.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"
#include "lib/etcd/client.h"
#include "runtime/chain/cache.h"
#include "runtime/conflist/conflist.h"

namespace nodegate::ipam::cluster {
namespace {

constexpr int kExitOk = cli::kExitOk;
constexpr int kExitFindings = cli::kExitNo;
constexpr int kExitBadInput = cli::kExitUsage;
constexpr int kExitFailed = cli::kExitUnavailable;

using OrderedJson = nlohmann::ordered_json;

struct Flags {
  std::string conf = "/etc/cni/net.d";
  std::string network;
  cli::Format output = cli::Format::kText;
  // check
  std::string node;
  std::string cache_dir = runtime::kDefaultCacheDir;
  bool with_cache = false;
  std::vector<std::string> nodes;
  // release
  std::string handle;
  bool handles = false;
  // import
  std::string data_dir = "/var/lib/cni/networks";
  std::string from_network;
  std::string legacy_ifname = "eth0";
  bool dry_run = false;
};

// A network's cluster-ipam config, as the runtime would hand it to the plugin: the plugin's
// object with the list's name and cniVersion.
Result<ClusterConfig> LoadNetworkConfig(const Flags& f) {
  std::vector<std::string> files;
  struct stat st {};
  if (::stat(f.conf.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    NG_ASSIGN_OR_RETURN(files, runtime::ConfFilesInLoadOrder(f.conf));
  } else {
    files.push_back(f.conf);
  }
  struct Match {
    std::string where;
    cni::Json conf;
  };
  std::vector<Match> matches;
  std::set<std::string> names;
  for (const auto& file : files) {
    auto list = runtime::LoadConfFile(file);
    if (!list.ok()) continue;  // `nodegate conf validate` is the tool for broken files
    if (!f.network.empty() && list->name != f.network) continue;
    // As a runtime: of several files of one network, the first in load order is the network.
    if (!names.insert(list->name).second) continue;
    for (const auto& plugin : list->plugins) {
      const auto ipam = plugin.raw.find("ipam");
      if (ipam == plugin.raw.end() || !ipam->is_object() ||
          ipam->value("type", "") != "cluster-ipam") {
        continue;
      }
      cni::Json conf = plugin.raw;
      conf["name"] = list->name;
      conf["cniVersion"] = list->cni_version;
      matches.push_back({list->name + " (" + file + ")", std::move(conf)});
    }
  }
  if (matches.empty()) {
    return Error(kErrInvalidConfig, "no network using cluster-ipam in " + f.conf +
                                        (f.network.empty() ? "" : " named " + f.network));
  }
  if (matches.size() > 1) {
    std::string all;
    for (const auto& m : matches) all += (all.empty() ? "" : ", ") + m.where;
    return Error(kErrInvalidConfig,
                 "several networks use cluster-ipam (" + all + "): choose one with --network");
  }
  NG_ASSIGN_OR_RETURN(cni::NetConf net, cni::ParseNetConf(matches[0].conf.dump(), ConfigShape()));
  NodeNameSources sources = NodeNameSources::FromProcess();
  auto cfg = LoadClusterConfig(net, "", Purpose::kAllocate, sources);
  if (!cfg.ok()) return cfg.error().WithContext(matches[0].where);
  // --node names the node the command is about, whatever this machine is.
  if (!f.node.empty()) cfg->node_name = f.node;
  return cfg;
}

void PrintRows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

std::string N(uint64_t n) { return std::to_string(n); }

void PrintUsage(const Usage& u, cli::Format output) {
  if (output != cli::Format::kText) {
    OrderedJson j = {{"network", u.network}, {"revision", u.revision}};
    j["rangeSets"] = OrderedJson::array();
    for (const auto& s : u.sets) {
      j["rangeSets"].push_back({{"index", s.set},
                                {"ranges", s.ranges},
                                {"blocks", s.blocks},
                                {"claimedBlocks", s.claimed},
                                {"addresses", s.addresses},
                                {"allocated", s.allocated}});
    }
    j["nodes"] = OrderedJson::array();
    for (const auto& n : u.nodes) {
      j["nodes"].push_back({{"node", n.node},
                            {"blocks", n.blocks},
                            {"addresses", n.addresses},
                            {"allocated", n.allocated},
                            {"lent", n.lent},
                            {"borrowed", n.borrowed},
                            {"handles", n.handles}});
    }
    j["blocks"] = OrderedJson::array();
    for (const auto& b : u.blocks) {
      j["blocks"].push_back({{"block", b.block.ToString()},
                             {"node", b.node},
                             {"addresses", b.addresses},
                             {"allocated", b.allocated},
                             {"lent", b.lent}});
    }
    j["borrowed"] = OrderedJson::array();
    for (const auto& b : u.borrowed) {
      j["borrowed"].push_back({{"ip", b.ip.ToString()},
                               {"block", b.block.ToString()},
                               {"blockNode", b.block_node},
                               {"node", b.node},
                               {"handle", b.handle}});
    }
    std::cout << cli::Render(j, output);
    return;
  }
  std::cout << "network " << u.network << " (etcd revision " << u.revision << ")\n\n";
  std::vector<std::vector<std::string>> sets{
      {"SET", "RANGES", "BLOCKS", "CLAIMED", "ADDRESSES", "ALLOCATED"}};
  for (const auto& s : u.sets) {
    sets.push_back({N(s.set), s.ranges, N(s.blocks), N(s.claimed), N(s.addresses), N(s.allocated)});
  }
  PrintRows(sets);
  std::cout << "\n";
  std::vector<std::vector<std::string>> nodes{
      {"NODE", "BLOCKS", "ADDRESSES", "ALLOCATED", "LENT", "BORROWED", "HANDLES"}};
  for (const auto& n : u.nodes) {
    nodes.push_back({n.node, N(n.blocks), N(n.addresses), N(n.allocated), N(n.lent), N(n.borrowed),
                     N(n.handles)});
  }
  PrintRows(nodes);
  std::cout << "\n";
  std::vector<std::vector<std::string>> blocks{{"BLOCK", "NODE", "ADDRESSES", "ALLOCATED", "LENT"}};
  for (const auto& b : u.blocks) {
    blocks.push_back({b.block.ToString(), b.node, N(b.addresses), N(b.allocated), N(b.lent)});
  }
  PrintRows(blocks);
  if (!u.borrowed.empty()) {
    std::cout << "\n";
    std::vector<std::vector<std::string>> borrowed{
        {"BORROWED", "BLOCK", "BLOCK NODE", "NODE", "HANDLE"}};
    for (const auto& b : u.borrowed) {
      borrowed.push_back({b.ip.ToString(), b.block.ToString(), b.block_node, b.node, b.handle});
    }
    PrintRows(borrowed);
  }
}

int Fail(const Error& e) {
  std::cerr << "nodegate ipam: " << e.msg << (e.details.empty() ? "" : " (" + e.details + ")")
            << "\n";
  return e.code == kErrTryAgainLater || e.code == kErrIo || e.code == kErrStoreCorrupt
             ? kExitFailed
             : kExitBadInput;
}

Result<std::unique_ptr<etcd::Client>> Connect(const ClusterConfig& cfg) {
  return etcd::Client::Create(ClientOptionsFor(cfg, std::nullopt));
}

int Show(const Flags& f) {
  auto cfg = LoadNetworkConfig(f);
  if (!cfg.ok()) return Fail(cfg.error());
  auto client = Connect(*cfg);
  if (!client.ok()) return Fail(client.error());
  auto snapshot = ReadSnapshot(**client, cfg->keys(), cfg->network_name);
  if (!snapshot.ok()) return Fail(snapshot.error());
  PrintUsage(Summarize(*snapshot, cfg->pool), f.output);
  return kExitOk;
}

int Check(const Flags& f) {
  auto cfg = LoadNetworkConfig(f);
  if (!cfg.ok()) return Fail(cfg.error());
  auto client = Connect(*cfg);
  if (!client.ok()) return Fail(client.error());
  auto snapshot = ReadSnapshot(**client, cfg->keys(), cfg->network_name);
  if (!snapshot.ok()) return Fail(snapshot.error());
  CheckInputs inputs;
  if (f.with_cache) {
    inputs.node = cfg->node_name;
    inputs.live.emplace();
    for (const auto& a : runtime::ListCachedAttachments(f.cache_dir)) {
      if (a.network_name == cfg->network_name) inputs.live->insert(a.container_id + "/" + a.ifname);
    }
  }
  if (!f.nodes.empty()) inputs.nodes = std::set<std::string>(f.nodes.begin(), f.nodes.end());
  const auto problems = FindProblems(*snapshot, cfg->pool, inputs);
  if (f.output != cli::Format::kText) {
    OrderedJson j = {{"network", cfg->network_name},
                     {"revision", snapshot->revision},
                     {"problems", OrderedJson::array()}};
    for (const auto& p : problems) {
      j["problems"].push_back({{"kind", p.kind}, {"subject", p.subject}, {"detail", p.detail}});
    }
    std::cout << cli::Render(j, f.output);
  } else if (problems.empty()) {
    std::cout << "network " << cfg->network_name << ": no problem found ("
              << snapshot->handles.size() << " handles, " << snapshot->blocks.size()
              << " blocks)\n";
  } else {
    std::vector<std::vector<std::string>> rows{{"KIND", "SUBJECT", "DETAIL"}};
    for (const auto& p : problems) rows.push_back({p.kind, p.subject, p.detail});
    PrintRows(rows);
  }
  return problems.empty() ? kExitOk : kExitFindings;
}

int Release(const Flags& f) {
  if (f.handle.empty() == f.node.empty()) {
    std::cerr << "nodegate ipam release: give --handle ID/IFNAME or --node NAME\n";
    return kExitBadInput;
  }
  auto cfg = LoadNetworkConfig(f);
  if (!cfg.ok()) return Fail(cfg.error());
  auto client = Connect(*cfg);
  if (!client.ok()) return Fail(client.error());
  if (!f.handle.empty()) {
    const size_t slash = f.handle.find('/');
    if (slash == std::string::npos) {
      std::cerr << "nodegate ipam release: --handle is CONTAINERID/IFNAME\n";
      return kExitBadInput;
    }
    Allocator allocator(**client, *cfg);
    if (Status s = allocator.Release(f.handle.substr(0, slash), f.handle.substr(slash + 1));
        !s.ok()) {
      return Fail(s.error());
    }
    std::cout << "released " << f.handle << (allocator.counters().released ? "" : " (held nothing)")
              << "\n";
    return kExitOk;
  }
  auto released = ReleaseNode(**client, *cfg, f.node, f.handles);
  if (!released.ok()) return Fail(released.error());
  if (f.output != cli::Format::kText) {
    OrderedJson j = {{"node", f.node},
                     {"releasedHandles", released->released_handles},
                     {"releasedBlocks", OrderedJson::array()},
                     {"keptBlocks", OrderedJson::array()}};
    for (const auto& b : released->released_blocks) j["releasedBlocks"].push_back(b.ToString());
    for (const auto& [b, why] : released->kept_blocks) {
      j["keptBlocks"].push_back({{"block", b.ToString()}, {"why", why}});
    }
    std::cout << cli::Render(j, f.output);
  } else {
    for (const auto& h : released->released_handles) std::cout << "released handle " << h << "\n";
    for (const auto& b : released->released_blocks)
      std::cout << "released block " << b.ToString() << "\n";
    for (const auto& [b, why] : released->kept_blocks) {
      std::cout << "kept block " << b.ToString() << ": " << why << "\n";
    }
  }
  return released->kept_blocks.empty() ? kExitOk : kExitFindings;
}

int Import(const Flags& f) {
  if (f.node.empty()) {
    std::cerr << "nodegate ipam import: --node NAME is the node whose host-local state it is\n";
    return kExitBadInput;
  }
  auto cfg = LoadNetworkConfig(f);
  if (!cfg.ok()) return Fail(cfg.error());
  auto entries = ReadHostLocalState(
      f.data_dir, f.from_network.empty() ? cfg->network_name : f.from_network, f.legacy_ifname);
  if (!entries.ok()) return Fail(entries.error());
  auto client = Connect(*cfg);
  if (!client.ok()) return Fail(client.error());
  const auto outcomes = ImportHostLocal(**client, *cfg, *entries, f.dry_run);
  int refused = 0;
  OrderedJson j = {
      {"node", cfg->node_name}, {"dryRun", f.dry_run}, {"handles", OrderedJson::array()}};
  std::vector<std::vector<std::string>> rows{{"HANDLE", "ADDRESSES", "RESULT"}};
  for (const auto& o : outcomes) {
    std::string ips;
    for (const auto& ip : o.ips) ips += (ips.empty() ? "" : ",") + ip.ToString();
    const std::string result =
        o.error.empty() ? (f.dry_run ? "would import" : "imported") : o.error;
    if (!o.error.empty()) ++refused;
    rows.push_back({o.handle, ips, result});
    j["handles"].push_back({{"handle", o.handle}, {"ips", ips}, {"result", result}});
  }
  if (f.output != cli::Format::kText) {
    std::cout << cli::Render(j, f.output);
  } else {
    PrintRows(rows);
  }
  return refused == 0 ? kExitOk : kExitFindings;
}

}  // namespace

int RunIpamCli(int argc, char** argv) {
  CLI::App app{
      "cluster-ipam's address pool in etcd: show it, check it, release a handle or a removed "
      "node's blocks, import a node's host-local reservations.\n"
      "Exit status: 0 done (check: nothing found), 1 problems found (or blocks kept, "
      "addresses refused), 2 unusable input, 3 etcd failed.",
      "nodegate ipam"};
  Flags f;
  app.add_option("--conf", f.conf,
                 "the network's CNI configuration: a .conflist, or a folder of them")
      ->capture_default_str();
  app.add_option("--network", f.network, "the network's name, when several use cluster-ipam");
  cli::AddOutputFlag(app, f.output, "table");
  app.require_subcommand(1);
  CLI::App* show = app.add_subcommand("show", "pools, blocks by node, use, borrowed addresses");
  CLI::App* check = app.add_subcommand("check",
                                       "duplicates, leaks, blocks of nodes gone, "
                                       "values that disagree");
  check->add_option("--node", f.node,
                    "with --cache-dir: this node's handles are checked against "
                    "its runtime's attachments");
  check->add_option("--cache-dir", f.cache_dir, "the runtime's libcni cache (its root)")
      ->capture_default_str();
  check->add_option("--nodes", f.nodes, "the cluster's nodes (comma-separated): others are gone")
      ->delimiter(',');
  CLI::App* release = app.add_subcommand("release", "release a handle, or a removed node's blocks");
  release->add_option("--handle", f.handle, "CONTAINERID/IFNAME");
  release->add_option("--node", f.node, "a removed node: its blocks no live handle holds");
  release->add_flag("--handles", f.handles, "with --node: release the node's handles first");
  CLI::App* import = app.add_subcommand("import", "record a node's host-local reservations");
  import->add_option("--node", f.node, "the node whose host-local state it is")->required();
  import->add_option("--data-dir", f.data_dir, "host-local's dataDir")->capture_default_str();
  import->add_option("--from-network", f.from_network,
                     "host-local's network name, when it is not this network's");
  import
      ->add_option("--legacy-ifname", f.legacy_ifname,
                   "the interface of reservations that name none (very old files)")
      ->capture_default_str();
  import->add_flag("--dry-run", f.dry_run, "say what would be imported, change nothing");
  if (auto code = cli::ParseFlags(app, argc, argv)) return *code;
  f.with_cache = !f.node.empty() && check->parsed();
  if (show->parsed()) return Show(f);
  if (check->parsed()) return Check(f);
  if (release->parsed()) return Release(f);
  return Import(f);
}

}  // namespace nodegate::ipam::cluster
