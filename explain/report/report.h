#pragma once
// The explanations as people and programs read them: text (default), JSON, YAML (the same
// content as JSON). Text puts the scheduler's summary line first, verbatim, so it can be
// matched with what `kubectl describe pod` shows; then a line per node.

#include <nlohmann/json.hpp>
#include <string>

#include "explain/daemonset/daemonset.h"
#include "explain/pending/pending.h"
#include "explain/scheduler/explanation.h"

namespace nodegate::explain {

std::string PodText(const PodExplanation& e);
nlohmann::json PodJson(const PodExplanation& e);

std::string DaemonSetText(const DaemonSetExplanation& e);
nlohmann::json DaemonSetJson(const DaemonSetExplanation& e);

std::string PendingText(const PendingReport& r);
nlohmann::json PendingJson(const PendingReport& r);

// ToYaml: a JSON value as block YAML (strings double-quoted in JSON's escapes, which YAML
// reads the same).
std::string ToYaml(const nlohmann::json& value);

}  // namespace nodegate::explain
