#include "webhook/metrics/metrics.h"

#include <cmath>
#include <cstdio>

#include "webhook/metrics/names.h"

namespace nodegate::webhook {
namespace {

// Whole numbers in full (a timestamp in seconds, a byte count), others to 9 digits.
std::string FormatDouble(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
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

std::string Metrics::Render(const std::vector<Sample>& samples) const {
  std::lock_guard lock(mu_);
  std::string out;
  const std::string reviews(kReviewsTotal);
  out += "# HELP " + reviews + " AdmissionReviews answered, by verdict and reason.\n# TYPE " +
         reviews + " counter\n";
  for (const auto& [key, n] : reviews_) {
    out += reviews + "{verdict=\"" + EscapeLabel(key.first) + "\",reason=\"" +
           EscapeLabel(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  const std::string refused(kRequestsRefusedTotal);
  out += "# HELP " + refused + " Requests answered with an HTTP error instead of a review.\n" +
         "# TYPE " + refused + " counter\n";
  for (const auto& [code, n] : refused_) {
    out += refused + "{code=\"" + std::to_string(code) + "\"} " + std::to_string(n) + "\n";
  }
  const std::string duration(kReviewDurationSeconds);
  out += "# HELP " + duration + " Time from a review's arrival to its answer.\n# TYPE " + duration +
         " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += bucket_counts_[i];
    out += duration + "_bucket{le=\"" + FormatDouble(kBuckets[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += duration + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += duration + "_sum " + FormatDouble(sum_) + "\n";
  out += duration + "_count " + std::to_string(count_) + "\n";
  std::string_view last_name;
  for (const Sample& sample : samples) {
    const std::string name(sample.name);
    if (sample.name != last_name) {
      out += "# HELP " + name + " " + std::string(sample.help) + "\n# TYPE " + name +
             (sample.counter ? " counter\n" : " gauge\n");
      last_name = sample.name;
    }
    out += name + (sample.labels.empty() ? "" : "{" + sample.labels + "}") + " " +
           FormatDouble(sample.value) + "\n";
  }
  return out;
}

}  // namespace nodegate::webhook
