#include "webhook/metrics/metrics.h"

#include <gtest/gtest.h>

namespace nodegate::webhook {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(Metrics, CountsReviewsAndFillsCumulativeBuckets) {
  Metrics m;
  m.RecordReview("allowed", "fits", 0.0004);
  m.RecordReview("allowed", "fits", 0.003);
  m.RecordReview("denied", "NodePorts", 7);
  m.RecordRefused(413);
  const std::string text =
      m.Render({{"nodegate_webhook_cache_synced", "synced", 1, ""},
                {"nodegate_webhook_cache_age_seconds", "age", 2.5, "resource=\"pods\""}});
  EXPECT_TRUE(Has(text, "nodegate_webhook_reviews_total{verdict=\"allowed\",reason=\"fits\"} 2"));
  EXPECT_TRUE(
      Has(text, "nodegate_webhook_reviews_total{verdict=\"denied\",reason=\"NodePorts\"} 1"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_requests_refused_total{code=\"413\"} 1"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_review_duration_seconds_bucket{le=\"0.0005\"} 1"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_review_duration_seconds_bucket{le=\"0.005\"} 2"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_review_duration_seconds_bucket{le=\"5\"} 2"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_review_duration_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_review_duration_seconds_count 3"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_cache_synced 1"));
  EXPECT_TRUE(Has(text, "nodegate_webhook_cache_age_seconds{resource=\"pods\"} 2.5"));
  EXPECT_TRUE(Has(text, "# TYPE nodegate_webhook_review_duration_seconds histogram"));
}

TEST(Metrics, SamplesOfOneMetricShareTheirHeaderAndCountersSaySo) {
  Metrics m;
  const std::string text = m.Render({{"x_lists_total", "lists", 3, "resource=\"nodes\"", true},
                                     {"x_lists_total", "lists", 4, "resource=\"pods\"", true},
                                     {"x_age", "age", 1, ""}});
  EXPECT_TRUE(Has(text, "# TYPE x_lists_total counter"));
  EXPECT_TRUE(Has(text, "# TYPE x_age gauge"));
  EXPECT_TRUE(Has(text, "x_lists_total{resource=\"pods\"} 4"));
  size_t headers = 0;
  for (size_t at = text.find("# TYPE x_lists_total"); at != std::string::npos;
       at = text.find("# TYPE x_lists_total", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(headers, 1u);
}

TEST(EscapeLabel, EscapesQuotesBackslashesAndNewlines) {
  EXPECT_EQ(EscapeLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace nodegate::webhook
