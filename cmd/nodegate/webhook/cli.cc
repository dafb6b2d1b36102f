// `nodegate webhook`: flags, wiring, the signal wait and the shutdown. The parts are libraries:
// handler/ (what each request gets), review/ (AdmissionReview), judge/ (the verdict),
// state/ (cache, sources), claims/ (agreement between replicas), kube/ (API client, watch),
// net/ (HTTPS server), metrics/, log/.

#include "cmd/nodegate/webhook/cli.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "admit/framework/feature_gates.h"
#include "kube/client/client.h"
#include "kube/client/config.h"
#include "kube/reflector/reflector.h"
#include "lib/base/result.h"
#include "lib/cli/parse_flags.h"
#include "lib/tls/tls.h"
#include "webhook/claims/claims.h"
#include "webhook/claims/coordinator.h"
#include "webhook/handler/duration.h"
#include "webhook/handler/handler.h"
#include "webhook/log/log.h"
#include "webhook/metrics/metrics.h"
#include "webhook/net/server.h"
#include "webhook/state/node_states.h"
#include "webhook/state/sources.h"

namespace nodegate::webhook {
namespace {

constexpr int kExitOk = cli::kExitOk;
constexpr int kExitBadInput = cli::kExitUsage;
// The serving certificate is looked at this often, and a warning logged when it has less than
// kCertificateWarning left.
constexpr auto kHousekeeping = std::chrono::seconds(60);
constexpr auto kCertificateWarning = std::chrono::hours(24 * 30);

struct Flags {
  std::string listen = "0.0.0.0:8443";
  std::string metrics_listen = "0.0.0.0:8080";
  std::string tls_cert;
  std::string tls_key;
  std::string kubeconfig;
  std::string timeout = "4s";
  std::string assume_ttl = "30s";
  std::string feature_gates;
  std::string watch_timeout = "5m";
  std::string read_timeout = "10s";
  std::string max_cache_age = "60s";
  std::string shutdown_delay = "10s";
  std::string log_format = "text";
  std::string claims_namespace;
  std::string identity;
};

int Fail(const std::string& message, int status = kExitBadInput) {
  Log(Level::kError, message);
  return status;
}

std::string EnvOr(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

// RaiseFileLimit: every connection is a descriptor; the soft limit (often 1024) goes up to the
// hard one.
void RaiseFileLimit() {
  struct rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

Result<std::chrono::nanoseconds> DurationFlag(const std::string& flag, const std::string& value,
                                              bool zero_ok = false) {
  auto d = ParseDuration(value);
  if (!d || (*d <= std::chrono::nanoseconds(0) && !zero_ok)) {
    return Error(kErrInvalidConfig,
                 flag + " " + value + ": expected a duration such as 4s or 500ms");
  }
  return *d;
}

// ClaimsNamespace: --claims-namespace, else the pod's namespace (POD_NAMESPACE from the
// downward API, or the service account's namespace file in a cluster); "" switches the
// agreement between replicas off.
std::string ClaimsNamespace(const Flags& f, const std::map<std::string, std::string>& env) {
  if (!f.claims_namespace.empty()) {
    return f.claims_namespace;
  }
  if (std::string ns = EnvOr(env, "POD_NAMESPACE"); !ns.empty()) {
    return ns;
  }
  if (f.kubeconfig.empty()) {
    std::ifstream file(std::string(kube::kServiceAccountDir) + "/namespace");
    std::string ns;
    std::getline(file, ns);
    return ns;
  }
  return "";
}

std::string Identity(const Flags& f, const std::map<std::string, std::string>& env) {
  if (!f.identity.empty()) {
    return f.identity;
  }
  if (std::string name = EnvOr(env, "POD_NAME"); !name.empty()) {
    return name;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string Seconds(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 1000.0)
             .substr(0, 5) +
         "s";
}

void WarnIfCertificateExpires(tls::ServerCertificate& cert) {
  auto expiry = tls::NotAfter(cert.Current());
  if (!expiry) {
    return;
  }
  const auto left = *expiry - std::chrono::system_clock::now();
  if (left < kCertificateWarning) {
    Log(Level::kWarn, "the serving certificate expires soon",
        {{"not_after", FormatTime(*expiry)},
         {"days_left", std::chrono::duration_cast<std::chrono::hours>(left).count() / 24}});
  }
}

// AddFlags: every flag of `nodegate webhook`, into `f`.
void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.listen, "HTTPS address for reviews and probes, ADDR:PORT")
      ->capture_default_str();
  app.add_option("--metrics-listen", f.metrics_listen,
                 "plain-HTTP address for /metrics (and probes), ADDR:PORT; empty: none")
      ->capture_default_str();
  app.add_option("--tls-cert", f.tls_cert, "serving certificate chain (PEM), reloaded on change")
      ->required();
  app.add_option("--tls-key", f.tls_key, "its private key (PEM), reloaded on change")->required();
  app.add_option("--kubeconfig", f.kubeconfig,
                 "API server access from this kubeconfig's current context (default: "
                 "in-cluster service account)");
  app.add_option("--timeout", f.timeout,
                 "the longest a review may take, reads of the API server included; the "
                 "request's ?timeout= shortens it")
      ->capture_default_str();
  app.add_option("--assume-ttl", f.assume_ttl,
                 "how long an allowed pod counts on its node before the watch shows it")
      ->capture_default_str();
  app.add_option("--watch-timeout", f.watch_timeout,
                 "the longest timeoutSeconds of a watch request (at most half of "
                 "--max-cache-age: the API server's bookmark before each watch's end is what "
                 "keeps a quiet cache current); the watch then resumes")
      ->capture_default_str();
  app.add_option("--read-timeout", f.read_timeout,
                 "a request (TLS handshake, header and body) must arrive within it, however "
                 "steadily a client trickles bytes; an idle keep-alive connection is closed "
                 "after it")
      ->capture_default_str();
  app.add_option("--max-cache-age", f.max_cache_age,
                 "past this without word from the API server (a list, an event, a bookmark), "
                 "reviews are allowed unchecked with a warning and /readyz "
                 "answers 503, until the watch resumes")
      ->capture_default_str();
  app.add_option("--shutdown-delay", f.shutdown_delay,
                 "after SIGTERM: /readyz answers 503 and reviews are still served this long "
                 "(while endpoints move elsewhere), then the reviews in flight finish and the "
                 "process exits; 0 for no delay")
      ->capture_default_str();
  app.add_option("--log-format", f.log_format, "json (one object a line) or text")
      ->check(CLI::IsMember({"json", "text"}))
      ->capture_default_str();
  app.add_option("--claims-namespace", f.claims_namespace,
                 "namespace of the Leases through which replicas agree on allowed pods "
                 "(default: POD_NAMESPACE, else the service account's; none: no agreement)");
  app.add_option("--identity", f.identity,
                 "this replica's name in the claims (default: POD_NAME, else the host name)");
  app.add_option("--feature-gates", f.feature_gates,
                 "the kubelet's gates, as for nodegate admit (Name=true|false,...)");
}

}  // namespace

namespace {

// Durations: the duration flags, parsed.
struct Durations {
  std::chrono::nanoseconds timeout, assume_ttl, watch_timeout, read_timeout, max_cache_age,
      shutdown_delay;
};

Result<Durations> ParseDurations(const Flags& f) {
  auto timeout = DurationFlag("--timeout", f.timeout);
  auto assume_ttl = DurationFlag("--assume-ttl", f.assume_ttl);
  auto watch_timeout = DurationFlag("--watch-timeout", f.watch_timeout);
  auto read_timeout = DurationFlag("--read-timeout", f.read_timeout);
  auto max_cache_age = DurationFlag("--max-cache-age", f.max_cache_age);
  auto shutdown_delay = DurationFlag("--shutdown-delay", f.shutdown_delay, /*zero_ok=*/true);
  for (const auto* d :
       {&timeout, &assume_ttl, &watch_timeout, &read_timeout, &max_cache_age, &shutdown_delay}) {
    if (!d->ok()) {
      return d->error();
    }
  }
  return Durations{*timeout,      *assume_ttl,    *watch_timeout,
                   *read_timeout, *max_cache_age, *shutdown_delay};
}

// WatchOptions: a reflector's options. Each watch ends with the API server's bookmark 2 s
// before its timeoutSeconds: asked for at most half the cache's allowed age, a quiet watch
// proves the cache current in time.
kube::ReflectorOptions WatchOptions(kube::ReflectorOptions o, const Durations& d) {
  using std::chrono::seconds;
  const seconds longest =
      std::max(seconds(3), std::min(std::chrono::duration_cast<seconds>(d.watch_timeout),
                                    std::chrono::duration_cast<seconds>(d.max_cache_age / 2)));
  o.max_watch_timeout = longest;
  o.min_watch_timeout = std::max(seconds(3), longest * 3 / 4);
  o.watch_idle_timeout = longest + seconds(5);
  o.log = [](bool problem, const std::string& message) {
    Log(problem ? Level::kWarn : Level::kInfo, message);
  };
  return o;
}

// StartMetricsServer: the plain-HTTP /metrics listener, or null without --metrics-listen.
Result<std::unique_ptr<net::Server>> StartMetricsServer(const Flags& f, Handler& handler,
                                                        std::chrono::milliseconds request_timeout) {
  if (f.metrics_listen.empty()) {
    return std::unique_ptr<net::Server>();
  }
  net::ServerOptions metrics_options;
  metrics_options.listen = f.metrics_listen;
  metrics_options.io_threads = 1;
  metrics_options.workers = 1;
  metrics_options.max_connections = 64;
  metrics_options.request_timeout = request_timeout;
  return net::Server::Start(
      metrics_options, [&handler](const net::HttpRequest& r) { return handler.ServeMetrics(r); },
      nullptr);
}

// WaitSignal: SIGTERM or SIGINT, or -1 once `limit` has passed (SIGPIPE is passed over).
int WaitSignal(const sigset_t& signals, std::chrono::nanoseconds limit) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(limit);
  struct timespec ts = {static_cast<time_t>(secs.count()),
                        static_cast<long>((limit - secs).count())};
  for (;;) {
    const int got = sigtimedwait(&signals, nullptr, &ts);
    if (got != SIGPIPE) {
      return got;
    }
  }
}

// ServeUntilSignalled: housekeeping until SIGTERM or SIGINT, then the shutdown: /readyz 503,
// reviews served for --shutdown-delay (a second signal cuts it short), those in flight drained.
void ServeUntilSignalled(const sigset_t& signals, const Durations& d, Handler& handler,
                         tls::ServerCertificate& cert, net::Server& server) {
  int signal = -1;
  auto last_check = Clock::now();
  while ((signal = WaitSignal(signals, kHousekeeping)) < 0) {
    if (Clock::now() - last_check >= kHousekeeping) {
      WarnIfCertificateExpires(cert);
      last_check = Clock::now();
    }
  }
  handler.BeginShutdown();
  Log(Level::kInfo, "stopping: /readyz answers 503; reviews are still served",
      {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
       {"shutdown_delay", Seconds(d.shutdown_delay)}});
  if (d.shutdown_delay > std::chrono::nanoseconds(0)) {
    WaitSignal(signals, d.shutdown_delay);
  }
  const auto grace =
      std::chrono::duration_cast<std::chrono::milliseconds>(d.timeout) + std::chrono::seconds(1);
  server.Drain(grace);
}

// Access: what the webhook reaches the API server and its clients with.
struct Access {
  kube::ClientConfig config;
  // One client per user of the API: each reflector's Stop cancels only its own stream.
  std::unique_ptr<kube::ApiClient> node_client, pod_client, reader;
  std::unique_ptr<tls::ServerCertificate> cert;  // the serving certificate, reloaded on change
};

Result<Access> LoadAccess(const Flags& f, const std::map<std::string, std::string>& env) {
  NG_ASSIGN_OR_RETURN(auto config,
                      f.kubeconfig.empty()
                          ? kube::InClusterConfig(env, std::string(kube::kServiceAccountDir))
                          : kube::LoadKubeconfig(f.kubeconfig));
  Access access;
  for (auto* client : {&access.node_client, &access.pod_client, &access.reader}) {
    NG_ASSIGN_OR_RETURN(auto created, kube::ApiClient::Create(config));
    *client = std::move(created);
  }
  NG_ASSIGN_OR_RETURN(auto cert, tls::ServerCertificate::Load(f.tls_cert, f.tls_key));
  access.cert = std::move(cert);
  access.config = std::move(config);
  return access;
}

// BlockSignals: SIGTERM, SIGINT and SIGPIPE blocked in every thread, so that they are taken by
// sigtimedwait (WaitSignal), never by a handler on some other thread.
sigset_t BlockSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Serve: the review and metrics listeners and the watches, until SIGTERM or SIGINT and the
// shutdown after it (ServeUntilSignalled); the exit status.
int Serve(const Flags& f, const Durations& d, Access& access, Handler& handler, Metrics& metrics,
          kube::Reflector& nodes, kube::Reflector& pods, const std::string& claims_namespace,
          const std::string& identity, const sigset_t& signals) {
  net::ServerOptions server_options;
  server_options.listen = f.listen;
  server_options.request_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(d.read_timeout);
  // Once the cache has synced, a review without claims to record waits for nothing
  // (microseconds of CPU): it runs on the I/O thread. Otherwise it goes to the worker pool.
  server_options.run_inline = [&handler](const net::HttpRequest&) { return handler.QuickNow(); };
  auto server = net::Server::Start(
      server_options, [&handler](const net::HttpRequest& r) { return handler.Serve(r); },
      access.cert.get(), [&metrics](int status) { metrics.RecordRefused(status); });
  if (!server.ok()) {
    return Fail(server.error().msg, cli::kExitUnavailable);
  }
  auto started_metrics = StartMetricsServer(f, handler, server_options.request_timeout);
  if (!started_metrics.ok()) {
    return Fail(started_metrics.error().msg, cli::kExitUnavailable);
  }
  std::unique_ptr<net::Server> metrics_server = std::move(started_metrics).value();
  Log(Level::kInfo, "serving",
      {{"listen", f.listen},
       {"port", (*server)->port()},
       {"metrics_port", metrics_server ? metrics_server->port() : 0},
       {"api_server", access.config.host + ":" + access.config.port},
       {"api_source", access.config.source},
       {"claims_namespace", claims_namespace},
       {"identity", identity}});
  if (claims_namespace.empty()) {
    Log(Level::kWarn,
        "no claims namespace: replicas do not agree on allowed pods (one replica only, or set "
        "--claims-namespace)");
  }
  WarnIfCertificateExpires(*access.cert);
  std::thread node_thread([&nodes] { nodes.Run(); });
  std::thread pod_thread([&pods] { pods.Run(); });

  ServeUntilSignalled(signals, d, handler, *access.cert, **server);
  if (metrics_server) {
    metrics_server->Stop();
  }
  nodes.Stop();
  pods.Stop();
  node_thread.join();
  pod_thread.join();
  Log(Level::kInfo, "stopped");
  return kExitOk;
}

}  // namespace

int RunWebhookCli(int argc, char** argv) {
  CLI::App app{
      "Serves the API server's validating admission webhook for pods created with "
      "spec.nodeName set: POST /validate judges them as that node's kubelet will, against the "
      "node and the pods bound to it (a watch-based cache); GET /healthz, /readyz; Prometheus "
      "metrics on --metrics-listen.\n"
      "Exit status: 0 after SIGTERM or SIGINT, 2 unusable flags or configuration, 3 an address "
      "to listen on could not be bound.",
      "nodegate webhook"};
  Flags f;
  AddFlags(app, f);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  SetLogFormat(f.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  auto durations = ParseDurations(f);
  if (!durations.ok()) {
    return Fail(durations.error().msg);
  }
  const Durations& d = *durations;
  auto gates = admit::FeatureGates::Parse(f.feature_gates);
  if (!gates.ok()) {
    return Fail(gates.error().msg);
  }
  const auto env = kube::ProcessEnvironment();
  auto access = LoadAccess(f, env);
  if (!access.ok()) {
    return Fail(access.error().msg);
  }
  auto& cert = access->cert;
  auto& reader = access->reader;
  RaiseFileLimit();
  const sigset_t signals = BlockSignals();

  admit::CheckOptions options;
  options.profile = admit::Profile::kKubelet;
  options.gates = *gates;
  const auto ttl = std::chrono::duration_cast<Clock::duration>(d.assume_ttl);
  NodeStates states(options, ttl);
  kube::Reflector nodes(WatchOptions(NodeWatch(*gates), d), *access->node_client, states);
  kube::Reflector pods(WatchOptions(PodWatch(*gates), d), *access->pod_client, states);

  const std::string claims_namespace = ClaimsNamespace(f, env);
  std::unique_ptr<ClaimStore> claim_store;
  std::unique_ptr<Coordinator> coordinator;
  if (!claims_namespace.empty()) {
    claim_store =
        std::make_unique<ClaimStore>(*reader, ClaimsOptions{claims_namespace, Identity(f, env)});
    coordinator = std::make_unique<Coordinator>(states, *claim_store, ttl);
  }
  Metrics metrics;
  HandlerParts parts;
  parts.states = &states;
  parts.watches = {&nodes, &pods};
  parts.read_node = [&reader, gates = *gates](const std::string& node, Clock::time_point deadline) {
    return ReadNode(*reader, gates, node, deadline);
  };
  parts.coordinator = coordinator.get();
  parts.metrics = &metrics;
  parts.certificate_expiry = [&cert] { return tls::NotAfter(cert->Current()); };
  HandlerOptions handler_options;
  handler_options.timeout = d.timeout;
  handler_options.max_cache_age = d.max_cache_age;
  Handler handler(std::move(parts), handler_options);

  return Serve(f, d, access.value(), handler, metrics, nodes, pods, claims_namespace,
               claim_store ? claim_store->options().identity : "", signals);
}

}  // namespace nodegate::webhook
