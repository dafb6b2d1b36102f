#pragma once
// HostNode: this machine as a v1 Node, for `nodegate admit` without --node: the host name,
// capacity = allocatable = its CPUs, memory, root-filesystem size (ephemeral-storage) and
// configured huge pages, 110 pods (the kubelet's default maxPods), and the kubernetes.io/os,
// kubernetes.io/arch and kubernetes.io/hostname labels. System and kube reservations are not
// known here, so allocatable is optimistic.

#include <string>

#include "admit/api/types.h"

namespace nodegate::admit {

Node HostNode();

// GoArch: the Go architecture name of a uname machine ("x86_64" -> "amd64").
std::string GoArch(const std::string& machine);

// HostSummary: "8 CPUs, 15.5Gi memory, 110 pods" for reports.
std::string HostSummary(const Node& node);

}  // namespace nodegate::admit
