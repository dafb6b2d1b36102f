#pragma once
// Resource: a pod's effective requests or a node's allocatable/requested totals in the units the
// predicates compare (pkg/scheduler/framework/types.go Resource): cpu in millicores, memory,
// ephemeral-storage and scalar resources in base units, plus the allowed pod number.
//
// ComputePodRequests is component-helpers' PodRequests: containers summed, init containers as a
// running peak (sidecars add to the app sum and to every later init container), pod-level
// requests replacing cpu/memory/hugepages, overhead added.

#include <cstdint>
#include <map>
#include <string>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"

namespace nodegate::admit {

struct Resource {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t allowed_pod_number = 0;
  std::map<std::string, int64_t, std::less<>> scalar;

  // FromResourceList: allocatable (pods included, only scalar names tracked).
  static Resource FromResourceList(const ResourceList& list);
  // FromPodRequests: SetMaxResource semantics (pods and non-scalar names ignored).
  static Resource FromPodRequests(const ResourceList& list);

  void Add(const Resource& other);
  void Subtract(const Resource& other);
  // Get: the amount for a resource name in comparison units (cpu in millicores).
  int64_t Get(std::string_view name) const;
  bool IsZeroRequest() const {
    return milli_cpu == 0 && memory == 0 && ephemeral_storage == 0 && scalar.empty();
  }
};

struct PodRequestOptions {
  bool pod_level_resources = true;    // PodLevelResources gate
  bool sidecars = true;               // SidecarContainers gate
  bool use_status_resources = false;  // InPlacePodVerticalScaling, for pods already on a node

  static PodRequestOptions FromGates(const FeatureGates& gates, bool already_on_node);
};

// ComputePodRequests: the pod's effective requests as exact quantities.
ResourceList ComputePodRequests(const Pod& pod, const PodRequestOptions& options);

// FormatResourceAmount: an amount in comparison units as people read it: cpu "1500m" or "2",
// pods as a count, everything else as a quantity ("2Gi", "1").
std::string FormatResourceAmount(std::string_view resource, int64_t amount);

// IsSupportedPodLevelResource: cpu, memory and hugepages-* (component-helpers).
bool IsSupportedPodLevelResource(std::string_view name);

// HasRestartableInitContainer: some init container has restartPolicy Always.
bool HasRestartableInitContainer(const Pod& pod);

}  // namespace nodegate::admit
