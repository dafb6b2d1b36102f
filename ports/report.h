#pragma once
// `nodegate ports` output. JSON is the contract of issue 12 (fields may be added, never
// renamed):
//   {"ports": [{"hostIP", "protocol", "port", "verdict",
//               "declared":  [{"pod", "container", "source"}],
//               "mapped":    [{"containerID", "network", "pod" (or null), "target", "layout"}],
//               "listening": [{"pid" (or null), "command", "container" (or null)}]}]}
// Text is one table line per row, then a count per verdict.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ports/join.h"

namespace nodegate::ports {

nlohmann::json RowsToJson(const std::vector<PortRow>& rows);
std::string RowsToText(const std::vector<PortRow>& rows);

}  // namespace nodegate::ports
