// `nodegate admit` and `nodegate guard`: flags, inputs, exit codes. Everything else is in the
// library (admit/check, admit/predicates, admit/kubelet).

#include "cmd/nodegate/admit/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include "admit/api/host_node.h"
#include "admit/api/load.h"
#include "admit/api/manifest_url.h"
#include "admit/api/priority.h"
#include "admit/check/checker.h"
#include "cmd/nodegate/admit/install.h"
#include "cmd/nodegate/admit/live.h"
#include "cmd/nodegate/admit/report.h"
#include "lib/base/result.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"
#include "lib/cni/cache_pods.h"
#include "lib/sys/file_lock.h"

namespace nodegate::admit {
namespace {

constexpr int kExitAdmitted = cli::kExitOk;
constexpr int kExitRejected = cli::kExitNo;
constexpr int kExitBadInput = cli::kExitUsage;

// CommonFlags: the flags admit and guard share.
struct CommonFlags {
  std::string profile = "scheduler";
  std::string host_os = "linux";
  std::string feature_gates;
  std::string node_file;
  std::vector<std::string> pods_files;
  std::string manifests_dir;
  cli::Format output = cli::Format::kText;
  bool live = false;
  bool strict = false;
  std::string cni_cache_dir = cni::kDefaultCniCacheDir;
  std::string priority_classes_file;
  std::string manifest_url;
  double manifest_url_timeout = 10;  // seconds, the kubelet's HTTP client timeout
  bool allow_preemption = false;     // guard only
};

void AddCommonFlags(CLI::App& app, CommonFlags& f) {
  app.add_option("--profile", f.profile, "scheduler (kube-scheduler Filters) or kubelet")
      ->check(CLI::IsMember({"scheduler", "kubelet"}))
      ->capture_default_str();
  app.add_option("--host-os", f.host_os, "the kubelet's OS (kubelet profile)")
      ->capture_default_str();
  app.add_option("--feature-gates", f.feature_gates,
                 "Name=true|false,... (PodLevelResources, SidecarContainers, "
                 "SupplementalGroupsPolicy, TaintTolerationComparisonOperators, "
                 "InPlacePodVerticalScaling)");
  app.add_option("--node", f.node_file, "a v1 Node (JSON or YAML); default: this machine");
  app.add_option("--pods", f.pods_files,
                 "pods already on the node: Pod, PodList, List, JSON array or multi-document "
                 "YAML (repeatable)")
      ->allow_extra_args(false);  // one file per --pods, so POD_FILEs are never swallowed
  cli::AddOutputFlag(app, f.output);
  auto* live = app.add_flag("--live", f.live,
                            "also warn about host ports a process listens on or a portmap "
                            "mapping of another container holds on this node");
  app.add_flag("--strict", f.strict, "with --live: a warning rejects the pod")->needs(live);
  app.add_option("--cni-cache", f.cni_cache_dir,
                 "with --live: the runtime's libcni result cache, to name mapped pods")
      ->capture_default_str();
  app.add_option("--priority-classes", f.priority_classes_file,
                 "the cluster's PriorityClass objects: priorityClassName of --pods and candidate "
                 "pods is resolved into spec.priority as the API server does (without it only "
                 "system-cluster-critical and system-node-critical are known)");
  auto* url = app.add_option("--manifest-url", f.manifest_url,
                             "the kubelet's --manifest-url: its Pod or PodList are static pods "
                             "on the node (http:// only)");
  app.add_option("--manifest-url-timeout", f.manifest_url_timeout,
                 "seconds for the whole --manifest-url request")
      ->check(CLI::Range(0.001, 3600.0))
      ->needs(url)
      ->capture_default_str();
}

// Environment: the node and the pods on it, as the flags describe them.
struct Environment {
  std::optional<Checker> checker;
  Report report;
  std::optional<ports::LiveClaims> live;  // --live
  PriorityClasses priority_classes = PriorityClasses::BuiltIn();
  std::vector<std::string> notes;  // for stderr: what the kubelet would silently ignore
};

// ResolvePriorities: priority admission for pods that reach the node through the API server.
nodegate::Status ResolvePriorities(std::vector<Pod>& pods, const PriorityClasses& classes) {
  for (Pod& pod : pods) {
    if (auto r = ResolvePriority(pod, classes); !r.ok()) {
      return r.error().WithContext(pod.source + ": pod " + pod.Key());
    }
  }
  return OkStatus();
}

// AttachLiveClaims: --live reads the node's listeners and mappings on the candidates' host
// ports once, before any check.
nodegate::Status AttachLiveClaims(const CommonFlags& f, Environment& env,
                                  const std::vector<Pod>& candidates) {
  if (!f.live) {
    return OkStatus();
  }
  NG_ASSIGN_OR_RETURN(auto live, ReadNodeLiveClaims(f.cni_cache_dir, candidates));
  env.live = std::move(live);
  env.report.live = true;
  return OkStatus();
}

// CheckCandidate: the verdict for one candidate, recorded in the report with its --live
// warnings. With `join`, an admitted candidate joins the node (admit); guard only checks.
// --strict decides before joining, so a pod it rejects holds nothing for later candidates.
void CheckCandidate(const CommonFlags& f, Environment& env, const Pod& candidate, bool join) {
  std::vector<ports::PortWarning> warnings;
  if (env.live) {
    warnings = ports::LiveWarningsFor(candidate, *env.live);
  }
  const bool strict_reject = f.strict && !warnings.empty();
  PodVerdict verdict = join && !strict_reject ? env.checker->CheckAndAdmit(candidate)
                                              : env.checker->Check(candidate);
  if (strict_reject) {
    RejectForWarnings(verdict, warnings, env.report.profile);
  }
  env.report.pods.push_back(std::move(verdict));
  env.report.warnings.push_back(std::move(warnings));
}

Result<Node> LoadNodeFor(const CommonFlags& f, Environment& env) {
  if (f.node_file.empty()) {
    Node node = HostNode();
    env.report.host_summary = HostSummary(node);
    return node;
  }
  env.report.node_source = f.node_file;
  return LoadNode(f.node_file);
}

// ExistingPods: --pods (priorities resolved), the --manifests folder and the --manifest-url
// source, in that order.
// `unreachable` is set when the --manifest-url source could not be read (exit 3, not 2).
Result<std::vector<Pod>> ExistingPods(const CommonFlags& f, const std::string& node_name,
                                      const std::string& skip_manifest, Environment& env,
                                      bool& unreachable) {
  std::vector<Pod> existing;
  for (const std::string& file : f.pods_files) {
    NG_ASSIGN_OR_RETURN(auto pods, LoadPods(file, /*allow_workloads=*/false));
    NG_RETURN_IF_ERROR(ResolvePriorities(pods, env.priority_classes));
    std::move(pods.begin(), pods.end(), std::back_inserter(existing));
  }
  if (!f.manifests_dir.empty()) {
    NG_ASSIGN_OR_RETURN(auto pods, LoadManifestDir(f.manifests_dir, node_name, skip_manifest));
    std::move(pods.begin(), pods.end(), std::back_inserter(existing));
  }
  if (!f.manifest_url.empty()) {
    FetchOptions options;
    options.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(f.manifest_url_timeout * 1000));
    std::string note;
    NG_RETURN_IF_ERROR(ParseHttpUrl(f.manifest_url));
    auto body = FetchUrl(f.manifest_url, options);
    if (!body.ok()) {
      unreachable = true;
      return body.error();
    }
    // LoadManifestUrl's steps, apart: a fetch that fails is the source unreachable (exit 3),
    // a body that is no pod list unusable input (exit 2).
    std::vector<Pod> pods;
    if (body->empty()) {
      note = f.manifest_url + ": zero-length data received; the kubelet runs no pods from it";
    } else {
      NG_ASSIGN_OR_RETURN(pods, PodsFromHttpSource(*body, f.manifest_url, node_name, &note));
    }
    if (!note.empty()) {
      env.notes.push_back(std::move(note));
    }
    std::move(pods.begin(), pods.end(), std::back_inserter(existing));
  }
  return existing;
}

Result<Environment> BuildEnvironment(const CommonFlags& f, const std::string& skip_manifest,
                                     bool& unreachable) {
  NG_ASSIGN_OR_RETURN(auto gates, FeatureGates::Parse(f.feature_gates));
  Environment env;
  if (!f.priority_classes_file.empty()) {
    NG_ASSIGN_OR_RETURN(auto classes, LoadPriorityClasses(f.priority_classes_file));
    env.priority_classes = std::move(classes);
  }
  NG_ASSIGN_OR_RETURN(auto node, LoadNodeFor(f, env));
  NG_ASSIGN_OR_RETURN(auto existing, ExistingPods(f, node.name, skip_manifest, env, unreachable));
  CheckOptions options;
  options.profile = f.profile == "kubelet" ? Profile::kKubelet : Profile::kScheduler;
  options.gates = gates;
  options.host_os = f.host_os;
  env.report.node = node.name;
  env.report.profile = options.profile;
  env.checker.emplace(std::move(node), std::move(options));
  env.report.existing = env.checker->AddExistingPods(std::move(existing));
  env.report.pods_on_node = env.checker->node_info().pods().size();
  return env;
}

void PrintNotes(const std::string& command, const Environment& env) {
  for (const std::string& note : env.notes) {
    std::cerr << command << ": note: " << note << "\n";
  }
}

// Render: the report as it is printed. Names come from the input as bytes; invalid UTF-8 is
// replaced (U+FFFD) so the JSON is always valid and dump() never throws.
std::string Render(const Report& report, cli::Format output,
                   const nlohmann::json& extra = nlohmann::json::object()) {
  if (output == cli::Format::kText) {
    return ReportToText(report);
  }
  nlohmann::json j = ReportToJson(report);
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    j[it.key()] = it.value();
  }
  return cli::Render(j, output);
}

int Fail(const std::string& command, const Error& error, int status = kExitBadInput) {
  std::cerr << command << ": " << error.msg << "\n";
  return status;
}

// Install: renders the report, then puts FILE's bytes into DIR (nothing that can fail comes
// after the report is printed).
int Install(const CommonFlags& flags, const std::string& file, const std::string& filename,
            const std::string& text, const Report& report) {
  const std::filesystem::path target = std::filesystem::path(flags.manifests_dir) / filename;
  std::error_code ec;
  const bool same_file =
      std::filesystem::exists(target, ec) && std::filesystem::equivalent(target, file, ec);
  std::string rendered =
      Render(report, flags.output, {{"installed", true}, {"path", target.string()}});
  if (flags.output == cli::Format::kText) {
    rendered += (same_file ? "already in place: " : "installed ") + target.string() + "\n";
    if (const PodVerdict& v = report.pods.front(); !v.evictions.empty()) {
      rendered += "the kubelet evicts " + EvictedPods(v) + " when it admits it\n";
    }
  }
  if (!same_file) {
    auto installed = InstallFileAtomically(flags.manifests_dir, filename, text);
    if (!installed.ok()) {
      return Fail("nodegate guard", installed.error());
    }
  }
  std::cout << rendered;
  return kExitAdmitted;
}

// RefuseInstall: the report of a manifest guard does not install, DIR untouched. An admission
// that evicts pods is the operator's decision: without --allow-preemption it is refused too.
int RefuseInstall(const CommonFlags& flags, const Report& report) {
  const PodVerdict& verdict = report.pods.front();
  const bool needs_permission = verdict.admitted && !verdict.evictions.empty();
  nlohmann::json extra = {{"installed", false}};
  if (needs_permission) {
    extra["needsAllowPreemption"] = true;
  }
  std::cout << Render(report, flags.output, extra);
  if (flags.output == cli::Format::kText) {
    if (needs_permission) {
      std::cout << "not installed: the kubelet would evict " << EvictedPods(verdict)
                << " to admit it; to let it, run again with --allow-preemption\n";
    }
    std::cout << "not installed: " << flags.manifests_dir << " is unchanged\n";
  }
  return kExitRejected;
}

// GuardInstall: the check and the install of `nodegate guard`, as one critical section.
int GuardInstall(const CommonFlags& flags, const std::string& file, const std::string& filename,
                 const std::string& text) {
  const std::string command = "nodegate guard";
  // Guards of one folder take turns, so that what one checks is still true when it installs.
  // The lock is on the folder itself: no lock file appears among the manifests.
  auto lock = sys::FileLock::AcquireDirectory(flags.manifests_dir);
  if (!lock.ok()) {
    return Fail(command, lock.error());
  }
  // The file with the same name in DIR is the previous version: it is replaced, not counted.
  bool unreachable = false;
  auto env = BuildEnvironment(flags, filename, unreachable);
  if (!env.ok()) {
    return Fail(command, env.error(), unreachable ? cli::kExitUnavailable : kExitBadInput);
  }
  PrintNotes(command, *env);
  auto pod = DecodeManifest(text, file, env->report.node);
  if (!pod.ok()) {
    return Fail(command, pod.error());
  }
  if (auto live = AttachLiveClaims(flags, *env, {*pod}); !live.ok()) {
    return Fail(command, live.error(), cli::kExitUnavailable);
  }
  CheckCandidate(flags, *env, *pod, /*join=*/false);
  const Report& report = env->report;
  if (!report.Admitted() || (!report.pods.front().evictions.empty() && !flags.allow_preemption)) {
    return RefuseInstall(flags, report);
  }
  return Install(flags, file, filename, text, report);
}

}  // namespace

int RunAdmitCli(int argc, char** argv) {
  CLI::App app{
      "Checks pods against one node as the kube-scheduler's Filter plugins (profile scheduler) "
      "or the kubelet's admission (profile kubelet) decide, and explains every rejection.\n"
      "Exit status: 0 all admitted, 1 some rejected, 2 unusable input, 3 the --manifest-url "
      "source or (--live) the kernel's sockets and mappings could not be read.",
      "nodegate admit"};
  CommonFlags flags;
  std::vector<std::string> pod_files;
  AddCommonFlags(app, flags);
  app.add_option("--manifests", flags.manifests_dir,
                 "a static-pod folder: every manifest counts as a pod on the node");
  app.add_option("POD_FILE", pod_files, "candidate pods, checked in order ('-' reads stdin)")
      ->required()
      ->allow_extra_args(true);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  if (std::count(pod_files.begin(), pod_files.end(), "-") > 1) {
    return Fail("nodegate admit", Error(kErrInvalidConfig, "'-' (stdin) may be given once"));
  }
  bool unreachable = false;
  auto env = BuildEnvironment(flags, "", unreachable);
  if (!env.ok()) {
    return Fail("nodegate admit", env.error(), unreachable ? cli::kExitUnavailable : kExitBadInput);
  }
  PrintNotes("nodegate admit", *env);
  std::vector<Pod> candidates;
  for (const std::string& file : pod_files) {
    auto pods = LoadPods(file, /*allow_workloads=*/true);
    if (!pods.ok()) {
      return Fail("nodegate admit", pods.error());
    }
    // Candidates are created through the API server, whose priority admission runs first.
    if (auto r = ResolvePriorities(*pods, env->priority_classes); !r.ok()) {
      return Fail("nodegate admit", r.error());
    }
    std::move(pods->begin(), pods->end(), std::back_inserter(candidates));
  }
  if (auto live = AttachLiveClaims(flags, *env, candidates); !live.ok()) {
    return Fail("nodegate admit", live.error(), cli::kExitUnavailable);
  }
  for (const Pod& candidate : candidates) {
    CheckCandidate(flags, *env, candidate, /*join=*/true);
  }
  const Report& report = env->report;
  std::cout << Render(report, flags.output);
  return report.Admitted() ? kExitAdmitted : kExitRejected;
}

int RunGuardCli(int argc, char** argv) {
  CLI::App app{
      "Checks a static-pod manifest against the node and the other manifests in DIR and, only "
      "when it is admitted, installs it into DIR atomically (temporary file + rename). When it "
      "is rejected, or admitted only by evicting pods without --allow-preemption, DIR is left "
      "untouched.\n"
      "Exit status: 0 installed, 1 rejected, 2 unusable input or install failure, 3 the "
      "--manifest-url source could not be read.",
      "nodegate guard"};
  CommonFlags flags;
  flags.profile = "kubelet";  // static pods are admitted by the kubelet
  std::string file;
  AddCommonFlags(app, flags);
  app.add_option("--manifests", flags.manifests_dir, "the static-pod folder")->required();
  app.add_flag("--allow-preemption", flags.allow_preemption,
               "install a critical manifest also when the kubelet admits it only by evicting "
               "other pods (default: refuse, and name them)");
  app.add_option("FILE", file, "the manifest to install")->required();
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  const std::string command = "nodegate guard";
  if (file == "-") {
    return Fail(command, Error(kErrInvalidConfig,
                               "FILE must be a file: its name is the manifest's name in DIR"));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(flags.manifests_dir, ec)) {
    return Fail(command, Error(kErrInvalidConfig, flags.manifests_dir + ": not a directory"));
  }
  const std::string filename = std::filesystem::path(file).filename().string();
  if (!IsManifestFile(filename)) {
    return Fail(command,
                Error(kErrInvalidConfig, file + ": hidden files are ignored by the kubelet"));
  }
  auto text = ReadInput(file);
  if (!text.ok()) {
    return Fail(command, text.error());
  }
  return GuardInstall(flags, file, filename, *text);
}

}  // namespace nodegate::admit
