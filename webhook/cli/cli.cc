// `nodegate webhook`: flags, wiring and the signal wait. The parts are libraries: review/
// (AdmissionReview), judge/ (the verdict), state/ (cache and watch), kube/ (API client),
// net/ (HTTPS server, TLS), metrics/.

#include "webhook/cli/cli.h"

#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "admit/framework/feature_gates.h"
#include "lib/cli/parse_flags.h"
#include "webhook/cli/duration.h"
#include "webhook/judge/judge.h"
#include "webhook/kube/client.h"
#include "webhook/kube/config.h"
#include "webhook/metrics/metrics.h"
#include "webhook/net/server.h"
#include "webhook/net/tls.h"
#include "webhook/review/review.h"
#include "webhook/state/node_states.h"
#include "webhook/state/reflector.h"

extern char** environ;

namespace nodegate::webhook {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

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
};

int Fail(const std::string& message) {
  std::cerr << "nodegate webhook: " << message << "\n";
  return kExitBadInput;
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

// RaiseFileLimit: every connection is a descriptor; the soft limit (often 1024) goes up to the
// hard one.
void RaiseFileLimit() {
  struct rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Webhook: the running parts and the two request handlers.
class Webhook {
 public:
  Webhook(NodeStates& states, Reflector& nodes, Reflector& pods, kube::ApiClient& reader,
          Metrics& metrics, std::chrono::nanoseconds timeout)
      : states_(states),
        nodes_(nodes),
        pods_(pods),
        reader_(reader),
        metrics_(metrics),
        timeout_(timeout) {}

  bool Synced() const { return nodes_.synced() && pods_.synced(); }

  net::HttpResponse Serve(const net::HttpRequest& request) {
    const std::string_view path =
        std::string_view(request.target).substr(0, std::string_view(request.target).find('?'));
    if (path == "/validate") {
      if (request.method != "POST") {
        metrics_.RecordRefused(405);
        return {405, "text/plain", "POST an AdmissionReview\n"};
      }
      return Validate(request);
    }
    return Probe(request, path);
  }

  net::HttpResponse ServeMetrics(const net::HttpRequest& request) {
    const std::string_view path =
        std::string_view(request.target).substr(0, std::string_view(request.target).find('?'));
    if (path == "/metrics" && request.method == "GET") {
      return {200, "text/plain; version=0.0.4", metrics_.Render(Gauges())};
    }
    return Probe(request, path);
  }

 private:
  net::HttpResponse Probe(const net::HttpRequest& request, std::string_view path) {
    if (request.method == "GET" && path == "/healthz") {
      return {200, "text/plain", "ok\n"};
    }
    if (request.method == "GET" && path == "/readyz") {
      return Synced()
                 ? net::HttpResponse{200, "text/plain", "ok\n"}
                 : net::HttpResponse{503, "text/plain", "the node and pod cache has not synced\n"};
    }
    metrics_.RecordRefused(404);
    return {404, "text/plain", "not found\n"};
  }

  net::HttpResponse Validate(const net::HttpRequest& request) {
    const auto started = Clock::now();
    auto review = DecodeReview(request.body);
    if (!review.ok()) {
      metrics_.RecordRefused(400);
      return {400, "text/plain", review.error().message + "\n"};
    }
    // Answer before the API server gives up: its ?timeout= (timeoutSeconds) or ours, less a
    // margin for the answer's way back.
    std::chrono::nanoseconds budget = timeout_;
    if (auto param = QueryParameter(request.target, "timeout")) {
      if (auto asked = ParseDuration(*param); asked && *asked > std::chrono::nanoseconds(0)) {
        budget = std::min(budget, std::max(*asked / 2, *asked - std::chrono::seconds(1)));
      }
    }
    JudgeContext context;
    context.states = &states_;
    context.synced = [this] { return Synced(); };
    context.read_node = [this](const std::string& node, Clock::time_point deadline) {
      return ReadNode(reader_, node, deadline);
    };
    Judgement judgement = Judge(*review, context, started + budget);
    if (!judgement.response.allowed || !judgement.response.warnings.empty()) {
      // One write per line, so lines of concurrent reviews do not interleave.
      const std::string line = "nodegate webhook: " + judgement.verdict + " " +
                               review->namespace_name + "/" + review->name + " (" +
                               judgement.reason + "): " +
                               (judgement.response.allowed ? judgement.response.warnings.front()
                                                           : judgement.response.message) +
                               "\n";
      std::cerr << line << std::flush;
    }
    std::string body = EncodeReviewResponse(judgement.response);
    metrics_.RecordReview(judgement.verdict, judgement.reason,
                          std::chrono::duration<double>(Clock::now() - started).count());
    return {200, "application/json", std::move(body)};
  }

  std::vector<Gauge> Gauges() {
    std::vector<Gauge> gauges;
    const auto now = Clock::now();
    for (const Reflector* r : {&nodes_, &pods_}) {
      const std::string labels =
          "resource=\"" +
          std::string(ResourceName(r == &nodes_ ? Resource::kNodes : Resource::kPods)) + "\"";
      const double age =
          r->synced() ? std::chrono::duration<double>(now - r->LastHeard()).count() : -1;
      gauges.push_back({"nodegate_webhook_cache_age_seconds",
                        "Seconds since the API server last told the cache anything (list, "
                        "event, bookmark); -1 before the first list.",
                        age, labels});
    }
    for (const Reflector* r : {&nodes_, &pods_}) {
      const std::string labels =
          "resource=\"" +
          std::string(ResourceName(r == &nodes_ ? Resource::kNodes : Resource::kPods)) + "\"";
      gauges.push_back({"nodegate_webhook_cache_lists", "Lists made (the first and every relist).",
                        static_cast<double>(r->relists()), labels});
    }
    gauges.push_back({"nodegate_webhook_cache_synced",
                      "1 once nodes and pods are listed (readyz), else 0.", Synced() ? 1.0 : 0.0,
                      ""});
    gauges.push_back({"nodegate_webhook_cached_nodes", "Nodes in the cache.",
                      static_cast<double>(states_.Nodes()), ""});
    gauges.push_back({"nodegate_webhook_cached_pods", "Pods bound to a node in the cache.",
                      static_cast<double>(states_.Pods()), ""});
    gauges.push_back({"nodegate_webhook_assumed_pods",
                      "Pods allowed but not yet seen in the watch.",
                      static_cast<double>(states_.AssumedPods()), ""});
    return gauges;
  }

  NodeStates& states_;
  Reflector& nodes_;
  Reflector& pods_;
  kube::ApiClient& reader_;
  Metrics& metrics_;
  const std::chrono::nanoseconds timeout_;
};

Result<std::chrono::nanoseconds> DurationFlag(const std::string& flag, const std::string& value) {
  auto d = ParseDuration(value);
  if (!d || *d <= std::chrono::nanoseconds(0)) {
    return Error{flag + " " + value + ": expected a duration such as 4s or 500ms"};
  }
  return *d;
}

}  // namespace

int RunWebhookCli(int argc, char** argv) {
  CLI::App app{
      "Serves the API server's validating admission webhook for pods created with "
      "spec.nodeName set: POST /validate judges them as that node's kubelet will, against the "
      "node and the pods bound to it (a watch-based cache); GET /healthz, /readyz; Prometheus "
      "metrics on --metrics-listen.\n"
      "Exit status: 0 after SIGTERM or SIGINT, 2 unusable flags or configuration.",
      "nodegate webhook"};
  Flags f;
  app.add_option("--listen", f.listen, "HTTPS address for reviews and probes, ADDR:PORT")
      ->capture_default_str();
  app.add_option("--metrics-listen", f.metrics_listen,
                 "plain-HTTP address for /metrics (and probes), ADDR:PORT")
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
                 "timeoutSeconds of each watch request (the API server then ends it and the "
                 "watch resumes)")
      ->capture_default_str();
  app.add_option("--read-timeout", f.read_timeout,
                 "a request (TLS handshake, header and body) must arrive within it, however "
                 "steadily a client trickles bytes; an idle keep-alive connection is closed "
                 "after it")
      ->capture_default_str();
  app.add_option("--feature-gates", f.feature_gates,
                 "the kubelet's gates, as for nodegate admit (Name=true|false,...)");
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  auto timeout = DurationFlag("--timeout", f.timeout);
  auto assume_ttl = DurationFlag("--assume-ttl", f.assume_ttl);
  auto watch_timeout = DurationFlag("--watch-timeout", f.watch_timeout);
  auto read_timeout = DurationFlag("--read-timeout", f.read_timeout);
  for (const auto* d : {&timeout, &assume_ttl, &watch_timeout, &read_timeout}) {
    if (!d->ok()) {
      return Fail(d->error().message);
    }
  }
  auto gates = admit::FeatureGates::Parse(f.feature_gates);
  if (!gates.ok()) {
    return Fail(gates.error().message);
  }
  auto config = f.kubeconfig.empty()
                    ? kube::InClusterConfig(Environment(), std::string(kube::kServiceAccountDir))
                    : kube::LoadKubeconfig(f.kubeconfig);
  if (!config.ok()) {
    return Fail(config.error().message);
  }
  // One client per user of the API: each reflector's Stop cancels only its own stream.
  auto node_client = kube::ApiClient::Create(*config);
  auto pod_client = kube::ApiClient::Create(*config);
  auto reader = kube::ApiClient::Create(*config);
  for (const auto* c : {&node_client, &pod_client, &reader}) {
    if (!c->ok()) {
      return Fail(c->error().message);
    }
  }
  auto cert = net::ServerCertificate::Load(f.tls_cert, f.tls_key);
  if (!cert.ok()) {
    return Fail(cert.error().message);
  }
  RaiseFileLimit();
  // Signals are taken by sigwait below, never by a handler on some other thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  admit::CheckOptions options;
  options.profile = admit::Profile::kKubelet;
  options.gates = *gates;
  NodeStates states(options, std::chrono::duration_cast<Clock::duration>(*assume_ttl));
  const auto watch_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(*watch_timeout) + std::chrono::seconds(0);
  Reflector nodes(Resource::kNodes, **node_client, states,
                  std::max(watch_seconds, std::chrono::seconds(1)));
  Reflector pods(Resource::kPods, **pod_client, states,
                 std::max(watch_seconds, std::chrono::seconds(1)));
  Metrics metrics;
  Webhook webhook(states, nodes, pods, **reader, metrics, *timeout);

  net::ServerOptions server_options;
  server_options.listen = f.listen;
  server_options.request_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(*read_timeout);
  // Once the cache has synced a review waits for nothing (microseconds of CPU): it runs on the
  // I/O thread. Before, it may read the API server, and goes to the worker pool.
  server_options.run_inline = [&webhook](const net::HttpRequest&) { return webhook.Synced(); };
  auto server = net::Server::Start(
      server_options, [&webhook](const net::HttpRequest& r) { return webhook.Serve(r); },
      cert->get(), [&metrics](int status) { metrics.RecordRefused(status); });
  if (!server.ok()) {
    return Fail(server.error().message);
  }
  std::unique_ptr<net::Server> metrics_server;
  if (!f.metrics_listen.empty()) {
    net::ServerOptions metrics_options;
    metrics_options.listen = f.metrics_listen;
    metrics_options.io_threads = 1;
    metrics_options.workers = 1;
    metrics_options.max_connections = 64;
    metrics_options.request_timeout = server_options.request_timeout;
    auto started = net::Server::Start(
        metrics_options, [&webhook](const net::HttpRequest& r) { return webhook.ServeMetrics(r); },
        nullptr);
    if (!started.ok()) {
      return Fail(started.error().message);
    }
    metrics_server = std::move(started).value();
  }
  std::cerr << "nodegate webhook: serving reviews on " << f.listen << " (port " << (*server)->port()
            << ")";
  if (metrics_server) {
    std::cerr << ", metrics on " << f.metrics_listen << " (port " << metrics_server->port() << ")";
  }
  std::cerr << "; API server " << config->host << ":" << config->port << " (" << config->source
            << ")" << std::endl;
  std::thread node_thread([&nodes] { nodes.Run(); });
  std::thread pod_thread([&pods] { pods.Run(); });

  int signal = 0;
  do {
    sigwait(&signals, &signal);
  } while (signal == SIGPIPE);
  std::cerr << "nodegate webhook: stopping (" << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ")"
            << std::endl;
  (*server)->Stop();
  if (metrics_server) {
    metrics_server->Stop();
  }
  nodes.Stop();
  pods.Stop();
  node_thread.join();
  pod_thread.join();
  return kExitOk;
}

}  // namespace nodegate::webhook
