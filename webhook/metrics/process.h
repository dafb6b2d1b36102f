#pragma once
// ProcessSamples: the process_* metrics every Prometheus client library exports (resident and
// virtual memory, CPU seconds, open and allowed descriptors, start time), read from /proc.
// A file that cannot be read leaves its metrics out.

#include <vector>

#include "webhook/metrics/metrics.h"

namespace nodegate::webhook {

std::vector<Sample> ProcessSamples();

}  // namespace nodegate::webhook
