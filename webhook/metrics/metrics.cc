#include "webhook/metrics/metrics.h"

#include <cstdio>

namespace nodegate::webhook {
namespace {

std::string FormatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Metrics::RecordReview(const std::string& verdict, const std::string& reason, double seconds) {
  std::lock_guard lock(mu_);
  ++reviews_[{verdict, reason}];
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) {
    ++i;
  }
  if (i < kBuckets.size()) {
    ++bucket_counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

void Metrics::RecordRefused(int http_status) {
  std::lock_guard lock(mu_);
  ++refused_[http_status];
}

std::string Metrics::Render(const std::vector<Gauge>& gauges) const {
  std::lock_guard lock(mu_);
  std::string out;
  out +=
      "# HELP nodegate_webhook_reviews_total AdmissionReviews answered, by verdict and reason.\n"
      "# TYPE nodegate_webhook_reviews_total counter\n";
  for (const auto& [key, n] : reviews_) {
    out += "nodegate_webhook_reviews_total{verdict=\"" + EscapeLabel(key.first) + "\",reason=\"" +
           EscapeLabel(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP nodegate_webhook_requests_refused_total Requests answered with an HTTP error "
      "instead of a review.\n"
      "# TYPE nodegate_webhook_requests_refused_total counter\n";
  for (const auto& [code, n] : refused_) {
    out += "nodegate_webhook_requests_refused_total{code=\"" + std::to_string(code) + "\"} " +
           std::to_string(n) + "\n";
  }
  out +=
      "# HELP nodegate_webhook_review_duration_seconds Time from a review's arrival to its "
      "answer.\n"
      "# TYPE nodegate_webhook_review_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += bucket_counts_[i];
    out += "nodegate_webhook_review_duration_seconds_bucket{le=\"" + FormatDouble(kBuckets[i]) +
           "\"} " + std::to_string(cumulative) + "\n";
  }
  out += "nodegate_webhook_review_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_) +
         "\n";
  out += "nodegate_webhook_review_duration_seconds_sum " + FormatDouble(sum_) + "\n";
  out += "nodegate_webhook_review_duration_seconds_count " + std::to_string(count_) + "\n";
  std::string last_name;
  for (const Gauge& g : gauges) {
    if (g.name != last_name) {
      out += "# HELP " + g.name + " " + g.help + "\n# TYPE " + g.name + " gauge\n";
      last_name = g.name;
    }
    out += g.name + (g.labels.empty() ? "" : "{" + g.labels + "}") + " " + FormatDouble(g.value) +
           "\n";
  }
  return out;
}

}  // namespace nodegate::webhook
