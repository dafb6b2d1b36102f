// `nodegate explain`: flags, where the cluster is, which explanation, which output. The
// explanations are the explain/ library's.

#include "cmd/nodegate/explain/cli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "admit/api/load.h"
#include "admit/framework/feature_gates.h"
#include "explain/cluster/read.h"
#include "explain/daemonset/daemonset.h"
#include "explain/pending/pending.h"
#include "explain/report/report.h"
#include "explain/scheduler/candidate.h"
#include "explain/scheduler/scheduler.h"
#include "kube/client/client.h"
#include "kube/client/config.h"
#include "lib/cli/parse_flags.h"

extern char** environ;

namespace nodegate::explain_cli {
namespace {

constexpr int kExitFits = 0;
constexpr int kExitFitsNowhere = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitUnreachable = 3;

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string ns;
  bool all_namespaces = false;
  std::string output = "text";
  double request_timeout = 30;  // seconds
  std::string feature_gates;
  std::string pod_name;
  std::string pod_file;
  std::string daemonset_name;
  bool pending = false;
};

int Fail(int code, const std::string& message) {
  std::cerr << "nodegate explain: " << message << "\n";
  return code;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) {
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  return env;
}

// ClientConfigOf: as kubectl finds the cluster: --kubeconfig, else KUBECONFIG, else
// ~/.kube/config, else the pod's service account (in-cluster).
admit::Result<kube::ClientConfig> ClientConfigOf(const Flags& f) {
  const std::map<std::string, std::string> env = Environment();
  if (!f.kubeconfig.empty()) {
    return kube::LoadKubeconfig(f.kubeconfig, f.context);
  }
  if (auto it = env.find("KUBECONFIG"); it != env.end() && !it->second.empty()) {
    return kube::LoadKubeconfigFiles(kube::SplitKubeconfigList(it->second), f.context);
  }
  if (auto home = env.find("HOME"); home != env.end()) {
    const std::string path = home->second + "/.kube/config";
    if (std::filesystem::exists(path)) {
      return kube::LoadKubeconfig(path, f.context);
    }
  }
  if (!f.context.empty()) {
    return admit::Error{"--context " + f.context + ": no kubeconfig (--kubeconfig, KUBECONFIG or " +
                        "~/.kube/config)"};
  }
  return kube::InClusterConfig(env, std::string(kube::kServiceAccountDir));
}

void Print(const Flags& f, const nlohmann::json& j, const std::string& text) {
  if (f.output == "json") {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (f.output == "yaml") {
    std::cout << explain::ToYaml(j);
  } else {
    std::cout << text;
  }
}

// CandidateFromFile: -f FILE: one Pod, or the pod template of a workload.
admit::Result<explain::CandidatePod> CandidateFromFile(const std::string& path,
                                                       const std::string& ns) {
  auto text = admit::ReadInput(path);
  if (!text.ok()) {
    return text.error();
  }
  auto documents = admit::ParseDocuments(*text, path);
  if (!documents.ok()) {
    return documents.error();
  }
  if (documents->size() != 1) {
    return admit::Error{path + ": expected one Pod, found " + std::to_string(documents->size()) +
                        " documents"};
  }
  nlohmann::json object = documents->front().value;
  if (!object.is_object()) {
    return admit::Error{path + ": expected a Pod object"};
  }
  const std::string kind = object.value("kind", "");
  if (!kind.empty() && kind != "Pod") {
    // A workload: the pod its controller would create.
    if (!object.contains("spec") || !object["spec"].is_object() ||
        !object["spec"].contains("template") || !object["spec"]["template"].is_object()) {
      return admit::Error{path + ": a " + kind + ", not a Pod (and it has no pod template)"};
    }
    nlohmann::json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
    pod["metadata"] = object["spec"]["template"].value("metadata", nlohmann::json::object());
    if (!pod["metadata"].is_object()) {
      pod["metadata"] = nlohmann::json::object();
    }
    pod["metadata"]["name"] = object.contains("metadata") && object["metadata"].is_object()
                                  ? object["metadata"].value("name", "pod")
                                  : "pod";
    pod["spec"] = object["spec"]["template"].value("spec", nlohmann::json::object());
    object = std::move(pod);
  }
  if (object.contains("metadata") && object["metadata"].is_object() && !ns.empty()) {
    object["metadata"]["namespace"] = ns;
  }
  auto candidate = explain::DecodeCandidate(object, path);
  if (!candidate.ok()) {
    return candidate.error();
  }
  candidate->pod.source = path;
  return candidate;
}

}  // namespace

int RunExplainCli(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "Why a pod fits no node, node by node: the kube-scheduler's own summary line, then each "
      "node's failing Filter with who holds the port or uses up the resource, and what "
      "preemption would do.",
      "nodegate explain"};
  app.fallthrough();
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: KUBECONFIG, ~/.kube/config, then in-cluster)");
  app.add_option("--context", f.context, "the kubeconfig context to use");
  app.add_option("-n,--namespace", f.ns, "namespace (default: the context's, else default)");
  app.add_flag("-A,--all-namespaces", f.all_namespaces, "--pending: every namespace");
  app.add_option("-o,--output", f.output, "text, json or yaml")
      ->check(CLI::IsMember({"text", "json", "yaml"}))
      ->capture_default_str();
  app.add_option("--request-timeout", f.request_timeout,
                 "seconds to wait for the API server before giving up on a read")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--feature-gates", f.feature_gates,
                 "Name=true|false,... as the cluster's scheduler has them (PodLevelResources, "
                 "SidecarContainers, TaintTolerationComparisonOperators, "
                 "InPlacePodVerticalScaling, DynamicResourceAllocation)");
  auto* pending =
      app.add_flag("--pending", f.pending, "every Pending pod, grouped by what blocks it");
  CLI::App* pod = app.add_subcommand("pod", "one pod: NAME from the API server, or -f FILE");
  pod->alias("po");
  auto* pod_name = pod->add_option("NAME", f.pod_name, "the pod's name");
  pod->add_option("-f,--filename", f.pod_file,
                  "a pod not created yet (a Pod, or a workload's pod template), JSON or YAML; - "
                  "is stdin")
      ->excludes(pod_name);
  CLI::App* ds = app.add_subcommand("daemonset", "where a DaemonSet's pods should run and why not");
  ds->alias("ds");
  ds->add_option("NAME", f.daemonset_name, "the DaemonSet's name")->required();
  pod->excludes(pending);
  ds->excludes(pending);
  app.require_subcommand(0, 1);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  const bool want_pod = pod->parsed();
  const bool want_ds = ds->parsed();
  if (!want_pod && !want_ds && !f.pending) {
    return Fail(kExitBadInput,
                "say what to explain: pod NAME, pod -f FILE, daemonset NAME or --pending");
  }
  if (want_pod && f.pod_name.empty() && f.pod_file.empty()) {
    return Fail(kExitBadInput, "explain pod: give NAME or -f FILE");
  }
  if (f.all_namespaces && !f.pending) {
    return Fail(kExitBadInput, "-A goes with --pending");
  }
  auto gates = admit::FeatureGates::Parse(f.feature_gates);
  if (!gates.ok()) {
    return Fail(kExitBadInput, gates.error().message);
  }

  // A pod from a file is read before the cluster: a file that is not a pod fails fast.
  std::optional<explain::CandidatePod> from_file;
  if (!f.pod_file.empty()) {
    auto c = CandidateFromFile(f.pod_file, f.ns);
    if (!c.ok()) {
      return Fail(kExitBadInput, c.error().message);
    }
    from_file = std::move(c).value();
  }

  auto config = ClientConfigOf(f);
  if (!config.ok()) {
    return Fail(kExitBadInput, config.error().message);
  }
  const std::string ns =
      !f.ns.empty() ? f.ns : (!config->namespace_name.empty() ? config->namespace_name : "default");
  auto client = kube::ApiClient::Create(*config);
  if (!client.ok()) {
    return Fail(kExitBadInput, client.error().message);
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(f.request_timeout * 1000.0));
  const std::string server =
      " (API server " + config->host + ":" + config->port + ", from " + config->source + ")";

  // What the command names, before the whole cluster is listed.
  std::optional<nlohmann::json> named;
  if (want_pod && from_file == std::nullopt) {
    auto got = explain::GetObject(**client, explain::PodPath(ns, f.pod_name),
                                  "pod " + ns + "/" + f.pod_name, timeout);
    if (!got.ok()) {
      return Fail(kExitUnreachable, got.error().message + server);
    }
    if (!*got) {
      return Fail(kExitBadInput, "pod " + ns + "/" + f.pod_name + " not found");
    }
    named = std::move(**got);
  } else if (want_ds) {
    auto got = explain::GetObject(**client, explain::DaemonSetPath(ns, f.daemonset_name),
                                  "daemonset " + ns + "/" + f.daemonset_name, timeout);
    if (!got.ok()) {
      return Fail(kExitUnreachable, got.error().message + server);
    }
    if (!*got) {
      return Fail(kExitBadInput, "daemonset " + ns + "/" + f.daemonset_name + " not found");
    }
    named = std::move(**got);
  }

  explain::ReadOptions read;
  read.gates = *gates;
  read.timeout = timeout;
  if (want_ds) {
    read.track_owner = "DaemonSet " + ns + "/" + f.daemonset_name;
  }
  auto read_cluster = explain::ReadCluster(**client, read);
  if (!read_cluster.ok()) {
    return Fail(kExitUnreachable, read_cluster.error().message + server);
  }
  // Kept to the end of the process: freeing 150,000 pods' records one by one would cost a
  // tenth of the run, and the process ends right after printing.
  static explain::Cluster* kept = nullptr;
  kept = new explain::Cluster(std::move(read_cluster).value());
  const explain::Cluster* cluster = kept;
  if (cluster->counts().unreadable > 0) {
    std::cerr << "nodegate explain: " << cluster->counts().unreadable
              << " pod(s) could not be read and are left out; the first: "
              << cluster->counts().first_unreadable << "\n";
  }
  const explain::Scheduler scheduler(*cluster, explain::SchedulerOptions{*gates});

  if (want_pod) {
    explain::CandidatePod candidate;
    if (from_file) {
      candidate = std::move(*from_file);
    } else {
      auto c = explain::DecodeCandidate(*named, "pod " + ns + "/" + f.pod_name);
      if (!c.ok()) {
        return Fail(kExitBadInput, c.error().message);
      }
      candidate = std::move(c).value();
    }
    const explain::PodExplanation e = scheduler.Explain(candidate);
    Print(f, explain::PodJson(e), explain::PodText(e));
    return e.fitting > 0 ? kExitFits : kExitFitsNowhere;
  }
  if (want_ds) {
    auto e = explain::ExplainDaemonSet(*named, *cluster, scheduler);
    if (!e.ok()) {
      return Fail(kExitBadInput,
                  "daemonset " + ns + "/" + f.daemonset_name + ": " + e.error().message);
    }
    Print(f, explain::DaemonSetJson(*e), explain::DaemonSetText(*e));
    return e->blocked > 0 ? kExitFitsNowhere : kExitFits;
  }
  const explain::PendingReport r =
      explain::ExplainPending(*cluster, scheduler, f.all_namespaces ? "" : ns);
  Print(f, explain::PendingJson(r), explain::PendingText(r));
  return r.fit_nowhere > 0 ? kExitFitsNowhere : kExitFits;
}

}  // namespace nodegate::explain_cli
