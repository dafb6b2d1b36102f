#pragma once
// `nodegate ports` output. JSON is the contract of issue 12 (fields may be added, never
// renamed):
//   {"ports": [{"hostIP", "protocol", "port", "verdict",
//               "declared":  [{"pod", "container", "source"}],
//               "mapped":    [{"containerID", "network", "pod" (or null), "target", "layout"}],
//               "listening": [{"pid" (or null), "command", "container" (or null)}]}]}
// Text is one table line per row, then a count per verdict.

#include <ostream>
#include <string>
#include <vector>

#include "ports/join.h"

namespace nodegate::ports {

// The JSON document, indented by two spaces, ending in a newline; keys in the order above.
void WriteRowsJson(const std::vector<PortRow>& rows, std::ostream& out);
std::string RowsToJson(const std::vector<PortRow>& rows);
void WriteRowsText(const std::vector<PortRow>& rows, std::ostream& out);
std::string RowsToText(const std::vector<PortRow>& rows);

}  // namespace nodegate::ports
