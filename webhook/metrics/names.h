#pragma once
// Every metric `nodegate webhook` exports, by name: deploy/webhook/monitoring.yaml's alerts and
// webhook/README.md ("Metrics") use these names. Counters end in _total.

#include <string_view>

namespace nodegate::webhook {

// Reviews.
inline constexpr std::string_view kReviewsTotal = "nodegate_webhook_reviews_total";
inline constexpr std::string_view kReviewDurationSeconds =
    "nodegate_webhook_review_duration_seconds";
inline constexpr std::string_view kRequestsRefusedTotal = "nodegate_webhook_requests_refused_total";
// The cache (label resource="nodes"|"pods").
inline constexpr std::string_view kCacheAgeSeconds = "nodegate_webhook_cache_age_seconds";
inline constexpr std::string_view kCacheStale = "nodegate_webhook_cache_stale";
inline constexpr std::string_view kCacheSynced = "nodegate_webhook_cache_synced";
inline constexpr std::string_view kCacheListsTotal = "nodegate_webhook_cache_lists_total";
inline constexpr std::string_view kCacheRelistsTotal = "nodegate_webhook_cache_relists_total";
inline constexpr std::string_view kWatchErrorsTotal = "nodegate_webhook_watch_errors_total";
inline constexpr std::string_view kWatchEventsTotal = "nodegate_webhook_watch_events_total";
inline constexpr std::string_view kCachedNodes = "nodegate_webhook_cached_nodes";
inline constexpr std::string_view kCachedPods = "nodegate_webhook_cached_pods";
inline constexpr std::string_view kAssumedPods = "nodegate_webhook_assumed_pods";
// Agreement between replicas (label result="recorded"|"conflict"|"failed").
inline constexpr std::string_view kClaimsTotal = "nodegate_webhook_claims_total";
// The serving certificate and the build.
inline constexpr std::string_view kCertificateExpiry =
    "nodegate_webhook_certificate_expiry_timestamp_seconds";
inline constexpr std::string_view kBuildInfo = "nodegate_webhook_build_info";
inline constexpr std::string_view kShuttingDown = "nodegate_webhook_shutting_down";
// The process, with Prometheus' standard names.
inline constexpr std::string_view kProcessResidentMemory = "process_resident_memory_bytes";
inline constexpr std::string_view kProcessVirtualMemory = "process_virtual_memory_bytes";
inline constexpr std::string_view kProcessCpuSeconds = "process_cpu_seconds_total";
inline constexpr std::string_view kProcessOpenFds = "process_open_fds";
inline constexpr std::string_view kProcessMaxFds = "process_max_fds";
inline constexpr std::string_view kProcessStartTime = "process_start_time_seconds";

}  // namespace nodegate::webhook
