#pragma once
// NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go, helper/resource_fit.go):
// the pod count and every requested resource must fit in allocatable minus what the pods on the
// node already request. All failures are collected: pods, cpu, memory, ephemeral-storage, then
// scalar resources (extended, hugepages, *kubernetes.io/*) by name.

#include <string>
#include <string_view>
#include <vector>

#include "admit/framework/predicate.h"

namespace nodegate::admit::node_resources_fit {

inline constexpr std::string_view kName = "NodeResourcesFit";
inline constexpr std::string_view kErrReasonTooManyPods = "Too many pods";
inline constexpr std::string_view kErrReasonSidecarGateOff =
    "Pod has a restartable init container and the SidecarContainers feature is disabled";

// InsufficientResourceReason: "Insufficient <name>".
std::string InsufficientReason(std::string_view resource);

struct Insufficient {
  InsufficientResource numbers;  // requested, used, capacity
  std::string reason;
  bool unresolvable = false;  // the request exceeds the whole allocatable
};

// Fits: the insufficient resources of `pod` on `node`, empty when it fits (the scheduler's
// Filter and the kubelet's AdmissionCheck share it).
std::vector<Insufficient> Fits(const PodInfo& pod, const NodeInfo& node);

// Explain: the request, allocatable, use and the pods using most of it.
std::string Explain(const Insufficient& insufficient, const NodeInfo& node);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::node_resources_fit
