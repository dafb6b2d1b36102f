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
#include "lib/base/result.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"

namespace nodegate::explain_cli {
namespace {

constexpr int kExitFits = cli::kExitOk;
constexpr int kExitFitsNowhere = cli::kExitNo;
constexpr int kExitBadInput = cli::kExitUsage;
constexpr int kExitUnreachable = cli::kExitUnavailable;

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string ns;
  bool all_namespaces = false;
  cli::Format output = cli::Format::kText;
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

// ClientConfigOf: as kubectl finds the cluster: --kubeconfig, else KUBECONFIG, else
// ~/.kube/config, else the pod's service account (in-cluster).
Result<kube::ClientConfig> ClientConfigOf(const Flags& f) {
  const std::map<std::string, std::string> env = kube::ProcessEnvironment();
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
    return Error(kErrDecode, "--context " + f.context +
                                 ": no kubeconfig (--kubeconfig, KUBECONFIG or " +
                                 "~/.kube/config)");
  }
  return kube::InClusterConfig(env, std::string(kube::kServiceAccountDir));
}

void Print(const Flags& f, const nlohmann::json& j, const std::string& text) {
  std::cout << (f.output == cli::Format::kText ? text : cli::Render(j, f.output));
}

// CandidateFromFile: -f FILE: one Pod, or the pod template of a workload.
Result<explain::CandidatePod> CandidateFromFile(const std::string& path, const std::string& ns) {
  NG_ASSIGN_OR_RETURN(auto text, admit::ReadInput(path));
  NG_ASSIGN_OR_RETURN(auto documents, admit::ParseDocuments(text, path));
  if (documents.size() != 1) {
    return Error(kErrDecode, path + ": expected one Pod, found " +
                                 std::to_string(documents.size()) + " documents");
  }
  nlohmann::json object = documents.front().value;
  if (!object.is_object()) {
    return Error(kErrDecode, path + ": expected a Pod object");
  }
  const std::string kind = object.value("kind", "");
  if (!kind.empty() && kind != "Pod") {
    // A workload: the pod its controller would create.
    if (!object.contains("spec") || !object["spec"].is_object() ||
        !object["spec"].contains("template") || !object["spec"]["template"].is_object()) {
      return Error(kErrDecode, path + ": a " + kind + ", not a Pod (and it has no pod template)");
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
  NG_ASSIGN_OR_RETURN(auto candidate, explain::DecodeCandidate(object, path));
  candidate.pod.source = path;
  return candidate;
}

}  // namespace

namespace {

// Subcommands: what AddFlags defined that the run looks at once the line is parsed.
struct Subcommands {
  CLI::App* pod = nullptr;
  CLI::App* daemonset = nullptr;
};

Subcommands AddFlags(CLI::App& app, Flags& f) {
  app.fallthrough();
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: KUBECONFIG, ~/.kube/config, then in-cluster)");
  app.add_option("--context", f.context, "the kubeconfig context to use");
  app.add_option("-n,--namespace", f.ns, "namespace (default: the context's, else default)");
  app.add_flag("-A,--all-namespaces", f.all_namespaces, "--pending: every namespace");
  cli::AddOutputFlag(app, f.output);
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
  return Subcommands{pod, ds};
}

// Unusable: why the parsed line asks for nothing explain can do, or "".
std::string Unusable(const Flags& f, bool want_pod, bool want_ds) {
  if (!want_pod && !want_ds && !f.pending) {
    return "say what to explain: pod NAME, pod -f FILE, daemonset NAME or --pending";
  }
  if (want_pod && f.pod_name.empty() && f.pod_file.empty()) {
    return "explain pod: give NAME or -f FILE";
  }
  if (f.all_namespaces && !f.pending) {
    return "-A goes with --pending";
  }
  return "";
}

// Named: the object the command names (a pod or DaemonSet), read before the whole cluster is
// listed; its exit status when it cannot be read or does not exist.
struct Named {
  std::optional<nlohmann::json> object;
  std::optional<int> failed;
};

Named GetNamed(kube::ApiClient& client, const std::string& path, const std::string& what,
               std::chrono::milliseconds timeout, const std::string& server) {
  auto got = explain::GetObject(client, path, what, timeout);
  if (!got.ok()) {
    return Named{std::nullopt, Fail(kExitUnreachable, got.error().msg + server)};
  }
  if (!*got) {
    return Named{std::nullopt, Fail(kExitBadInput, what + " not found")};
  }
  return Named{std::move(**got), std::nullopt};
}

// Report: the explanation asked for, printed; its exit status.
int Report(const Flags& f, const Subcommands& sub, const std::string& ns,
           std::optional<explain::CandidatePod> from_file, const Named& named,
           const explain::Cluster& cluster, const explain::Scheduler& scheduler) {
  if (sub.pod->parsed()) {
    explain::CandidatePod candidate;
    if (from_file) {
      candidate = std::move(*from_file);
    } else {
      auto c = explain::DecodeCandidate(*named.object, "pod " + ns + "/" + f.pod_name);
      if (!c.ok()) {
        return Fail(kExitBadInput, c.error().msg);
      }
      candidate = std::move(c).value();
    }
    const explain::PodExplanation e = scheduler.Explain(candidate);
    Print(f, explain::PodJson(e), explain::PodText(e));
    return e.fitting > 0 ? kExitFits : kExitFitsNowhere;
  }
  if (sub.daemonset->parsed()) {
    auto e = explain::ExplainDaemonSet(*named.object, cluster, scheduler);
    if (!e.ok()) {
      return Fail(kExitBadInput, "daemonset " + ns + "/" + f.daemonset_name + ": " + e.error().msg);
    }
    Print(f, explain::DaemonSetJson(*e), explain::DaemonSetText(*e));
    return e->blocked > 0 ? kExitFitsNowhere : kExitFits;
  }
  const explain::PendingReport r =
      explain::ExplainPending(cluster, scheduler, f.all_namespaces ? "" : ns);
  Print(f, explain::PendingJson(r), explain::PendingText(r));
  return r.fit_nowhere > 0 ? kExitFitsNowhere : kExitFits;
}

}  // namespace

int RunExplainCli(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "Why a pod fits no node, node by node: the kube-scheduler's own summary line, then each "
      "node's failing Filter with who holds the port or uses up the resource, and what "
      "preemption would do.",
      "nodegate explain"};
  const Subcommands sub = AddFlags(app, f);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  const bool want_pod = sub.pod->parsed();
  const bool want_ds = sub.daemonset->parsed();
  if (const std::string why = Unusable(f, want_pod, want_ds); !why.empty()) {
    return Fail(kExitBadInput, why);
  }
  auto gates = admit::FeatureGates::Parse(f.feature_gates);
  if (!gates.ok()) {
    return Fail(kExitBadInput, gates.error().msg);
  }
  // A pod from a file is read before the cluster: a file that is not a pod fails fast.
  std::optional<explain::CandidatePod> from_file;
  if (!f.pod_file.empty()) {
    auto c = CandidateFromFile(f.pod_file, f.ns);
    if (!c.ok()) {
      return Fail(kExitBadInput, c.error().msg);
    }
    from_file = std::move(c).value();
  }
  auto config = ClientConfigOf(f);
  if (!config.ok()) {
    return Fail(kExitBadInput, config.error().msg);
  }
  const std::string ns =
      !f.ns.empty() ? f.ns : (!config->namespace_name.empty() ? config->namespace_name : "default");
  auto client = kube::ApiClient::Create(*config);
  if (!client.ok()) {
    return Fail(kExitBadInput, client.error().msg);
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(f.request_timeout * 1000.0));
  const std::string server =
      " (API server " + config->host + ":" + config->port + ", from " + config->source + ")";
  Named named;
  if (want_pod && from_file == std::nullopt) {
    named = GetNamed(**client, explain::PodPath(ns, f.pod_name), "pod " + ns + "/" + f.pod_name,
                     timeout, server);
  } else if (want_ds) {
    named = GetNamed(**client, explain::DaemonSetPath(ns, f.daemonset_name),
                     "daemonset " + ns + "/" + f.daemonset_name, timeout, server);
  }
  if (named.failed) {
    return *named.failed;
  }
  explain::ReadOptions read;
  read.gates = *gates;
  read.timeout = timeout;
  if (want_ds) {
    read.track_owner = "DaemonSet " + ns + "/" + f.daemonset_name;
  }
  auto read_cluster = explain::ReadCluster(**client, read);
  if (!read_cluster.ok()) {
    return Fail(kExitUnreachable, read_cluster.error().msg + server);
  }
  // Kept to the end of the process: freeing 150,000 pods' records one by one would cost a
  // tenth of the run, and the process ends right after printing.
  static explain::Cluster* kept = nullptr;
  kept = new explain::Cluster(std::move(read_cluster).value());
  if (kept->counts().unreadable > 0) {
    std::cerr << "nodegate explain: " << kept->counts().unreadable
              << " pod(s) could not be read and are left out; the first: "
              << kept->counts().first_unreadable << "\n";
  }
  const explain::Scheduler scheduler(*kept, explain::SchedulerOptions{*gates});
  return Report(f, sub, ns, std::move(from_file), named, *kept, scheduler);
}

}  // namespace nodegate::explain_cli
