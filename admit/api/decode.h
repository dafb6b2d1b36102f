#pragma once
// Decoding of v1 Pod and Node objects from JSON values (YAML is converted to JSON first, see
// load.h), with the API-server defaulting and validation that change admission outcomes:
// namespace "default", requests defaulted from limits, hostNetwork ports copied to hostPort,
// allocatable defaulted from capacity; enum fields (operators, effects, protocols) and
// quantities validated. Every error names the field path ("spec.containers[0].ports[1].hostPort").

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "admit/api/types.h"
#include "lib/base/result.h"

namespace nodegate::admit {

// DecodePod: a Pod object (kind "Pod" or no kind). `where` prefixes error messages.
Result<Pod> DecodePod(const nlohmann::json& object, std::string_view where);

// DecodePodTemplate: a pod from a workload's spec.template (DaemonSet, Deployment, ...): name
// and namespace come from the workload, the rest from the template.
Result<Pod> DecodePodTemplate(const nlohmann::json& workload, std::string_view where);

// DecodeNode: a v1 Node object.
Result<Node> DecodeNode(const nlohmann::json& object, std::string_view where);

// ApplyHostNetworkPortDefaults: API defaulting (defaultHostNetworkPorts): with hostNetwork,
// every port whose hostPort is 0 gets hostPort = containerPort.
void ApplyHostNetworkPortDefaults(Pod& pod);

}  // namespace nodegate::admit
