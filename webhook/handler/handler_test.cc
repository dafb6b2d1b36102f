#include "webhook/handler/handler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admit/testing/builders.h"
#include "webhook/metrics/names.h"
#include "webhook/testing/records.h"

namespace nodegate::webhook {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;
using nlohmann::json;

class FakeWatch : public kube::WatchStatus {
 public:
  explicit FakeWatch(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  bool synced() const override { return synced_; }
  Clock::time_point LastProgress() const override { return progress_; }
  kube::ReflectorCounters counters() const override { return {2, 1, 3, 40}; }

  std::string name_;
  bool synced_ = true;
  Clock::time_point progress_;
};

admit::CheckOptions Kubelet() {
  admit::CheckOptions options;
  options.profile = admit::Profile::kKubelet;
  return options;
}

std::string Review(const std::string& node, const std::string& uid = "r-1") {
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u-" + uid}}},
      {"spec",
       {{"nodeName", node},
        {"containers",
         json::array({{{"name", "c"},
                       {"ports", json::array({{{"containerPort", 80}, {"hostPort", 80}}})}}})}}}};
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", uid},
                   {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                   {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                   {"namespace", "default"},
                   {"operation", "CREATE"},
                   {"userInfo", {{"username", "alice"}}},
                   {"object", pod}}}};
  return review.dump();
}

class HandlerTest : public ::testing::Test {
 protected:
  HandlerTest() {
    states_.ReplaceNodes(testing::Nodes(
        {MakeNode("n1").Label("kubernetes.io/os", "linux").Allocatable({{"pods", "10"}}).Obj()}));
    states_.ReplacePods(testing::Recs(
        {MakePod("holder").Uid("u-h").Node("n1").Container("c").HostPort("TCP//80").Obj()}));
    nodes_.progress_ = pods_.progress_ = now_;
  }

  Handler Make() {
    HandlerParts parts;
    parts.states = &states_;
    parts.watches = {&nodes_, &pods_};
    parts.read_node = [](const std::string&, Clock::time_point) {
      return Result<std::optional<NodeSnapshot>>(Error(kErrIo, "unreachable"));
    };
    parts.metrics = &metrics_;
    parts.certificate_expiry = [] {
      return std::optional<std::chrono::system_clock::time_point>(
          std::chrono::system_clock::from_time_t(1800000000));
    };
    HandlerOptions options;
    options.max_cache_age = std::chrono::seconds(60);
    return Handler(std::move(parts), options, [this] { return now_; });
  }

  net::HttpResponse Post(Handler& h, const std::string& body) {
    return h.Serve({"POST", "/validate?timeout=5s", "application/json", body});
  }
  net::HttpResponse Get(Handler& h, const std::string& path) {
    return h.Serve({"GET", path, "", ""});
  }

  Clock::time_point now_ = Clock::time_point(std::chrono::hours(5));
  NodeStates states_{Kubelet(), std::chrono::seconds(30), [this] { return now_; }};
  FakeWatch nodes_{"nodes"};
  FakeWatch pods_{"pods"};
  Metrics metrics_;
};

TEST_F(HandlerTest, ReadyOnlyWhenSyncedFreshAndNotStopping) {
  Handler h = Make();
  EXPECT_EQ(Get(h, "/readyz").status, 200);
  pods_.synced_ = false;
  EXPECT_EQ(Get(h, "/readyz").status, 503);
  pods_.synced_ = true;
  now_ += std::chrono::seconds(61);  // no progress for longer than --max-cache-age
  net::HttpResponse stale = Get(h, "/readyz");
  EXPECT_EQ(stale.status, 503);
  EXPECT_NE(stale.body.find("no word from the API server"), std::string::npos) << stale.body;
  pods_.progress_ = nodes_.progress_ = now_;  // the watch resumed
  EXPECT_EQ(Get(h, "/readyz").status, 200);
  h.BeginShutdown();
  EXPECT_EQ(Get(h, "/readyz").body, "shutting down\n");
  EXPECT_EQ(Get(h, "/healthz").status, 200);  // alive while it drains
}

TEST_F(HandlerTest, StaleCacheAllowsUncheckedUntilTheWatchResumes) {
  Handler h = Make();
  json fresh = json::parse(Post(h, Review("n1", "a")).body);
  EXPECT_FALSE(fresh["response"]["allowed"].get<bool>());  // port 80 is held
  now_ += std::chrono::seconds(90);
  nodes_.progress_ = now_;  // only the pods' watch is silent
  json stale = json::parse(Post(h, Review("n1", "b")).body);
  EXPECT_TRUE(stale["response"]["allowed"].get<bool>());
  EXPECT_NE(stale["response"]["warnings"][0].get<std::string>().find("not checked"),
            std::string::npos);
  const std::string metrics = h.ServeMetrics({"GET", "/metrics", "", ""}).body;
  EXPECT_NE(metrics.find("nodegate_webhook_cache_stale{resource=\"pods\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("nodegate_webhook_cache_stale{resource=\"nodes\"} 0\n"),
            std::string::npos);
  EXPECT_NE(
      metrics.find("nodegate_webhook_reviews_total{verdict=\"allowed\",reason=\"cache-stale\"} 1"),
      std::string::npos);
  pods_.progress_ = now_;
  EXPECT_FALSE(json::parse(Post(h, Review("n1", "c")).body)["response"]["allowed"].get<bool>());
}

TEST_F(HandlerTest, MetricsCarryEveryNameOnce) {
  Handler h = Make();
  Post(h, Review("n1"));
  const std::string text = h.ServeMetrics({"GET", "/metrics", "", ""}).body;
  for (std::string_view name : {kReviewsTotal,
                                kReviewDurationSeconds,
                                kRequestsRefusedTotal,
                                kCacheAgeSeconds,
                                kCacheStale,
                                kCacheSynced,
                                kCacheListsTotal,
                                kCacheRelistsTotal,
                                kWatchErrorsTotal,
                                kWatchEventsTotal,
                                kCachedNodes,
                                kCachedPods,
                                kAssumedPods,
                                kCertificateExpiry,
                                kBuildInfo,
                                kShuttingDown,
                                kProcessResidentMemory,
                                kProcessCpuSeconds,
                                kProcessOpenFds,
                                kProcessMaxFds}) {
    const std::string type = "# TYPE " + std::string(name) + " ";
    const size_t at = text.find(type);
    EXPECT_NE(at, std::string::npos) << name;
    EXPECT_EQ(text.find(type, at + 1), std::string::npos) << name << " twice";
  }
  EXPECT_NE(text.find("nodegate_webhook_cache_lists_total{resource=\"pods\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE nodegate_webhook_watch_errors_total counter"), std::string::npos);
  EXPECT_NE(text.find("nodegate_webhook_certificate_expiry_timestamp_seconds 1800000000\n"),
            std::string::npos);
  EXPECT_NE(text.find("nodegate_webhook_cached_pods 1\n"), std::string::npos);
}

TEST_F(HandlerTest, RefusesWhatIsNotAReview) {
  Handler h = Make();
  EXPECT_EQ(Post(h, "{").status, 400);
  EXPECT_EQ(h.Serve({"GET", "/validate", "", ""}).status, 405);
  EXPECT_EQ(Get(h, "/nope").status, 404);
  const std::string text = h.ServeMetrics({"GET", "/metrics", "", ""}).body;
  EXPECT_NE(text.find("nodegate_webhook_requests_refused_total{code=\"400\"} 1"),
            std::string::npos);
}

TEST(ReviewBudgetTest, TheRequestsTimeoutShortensIt) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  EXPECT_EQ(ReviewBudget(seconds(4), "/validate"), seconds(4));
  EXPECT_EQ(ReviewBudget(seconds(4), "/validate?timeout=10s"), seconds(4));
  EXPECT_EQ(ReviewBudget(seconds(4), "/validate?timeout=3s"), seconds(2));
  EXPECT_EQ(ReviewBudget(seconds(4), "/validate?timeout=1s"), milliseconds(500));
}

}  // namespace
}  // namespace nodegate::webhook
