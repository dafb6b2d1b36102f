#pragma once
// Metrics: what `nodegate webhook` exposes to Prometheus (text format 0.0.4) on its metrics
// port: reviews by verdict and reason, the review latency as a histogram, and the samples the
// caller supplies when rendering (cache age and staleness, lists, watch errors, claims, the
// process). Every metric name is defined in webhook/metrics/names.h.
//
//   metrics.RecordReview("denied", "NodePorts", 0.0004);
//   std::string text = metrics.Render({{kCacheSynced, "...", 1}});

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nodegate::webhook {

// Sample: one value of a metric the caller reads when rendering. Samples of one metric follow
// each other (its HELP and TYPE are written once).
struct Sample {
  std::string_view name;
  std::string_view help;
  double value = 0;
  std::string labels;    // `resource="pods"`, or empty
  bool counter = false;  // TYPE counter (a name ending in _total), else gauge
};

class Metrics {
 public:
  // Upper bounds of the latency buckets, seconds.
  static constexpr std::array<double, 13> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

  void RecordReview(const std::string& verdict, const std::string& reason, double seconds);
  // RecordRefused: a request that was not a review (bad body, too large, wrong path).
  void RecordRefused(int http_status);
  std::string Render(const std::vector<Sample>& samples) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> reviews_;
  std::map<int, uint64_t> refused_;
  std::array<uint64_t, kBuckets.size()> bucket_counts_{};  // not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

// EscapeLabel: a label value as the text format writes it (\\, \", \n escaped).
std::string EscapeLabel(const std::string& value);

}  // namespace nodegate::webhook
