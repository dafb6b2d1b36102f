#include "admit/framework/resource.h"

#include <algorithm>

#include "admit/api/resource_names.h"

namespace nodegate::admit {
namespace {

void AddList(ResourceList& into, const ResourceList& add) {
  for (const auto& [name, q] : add) {
    into[name].Add(q);
  }
}

void MaxList(ResourceList& into, const ResourceList& other) {
  for (const auto& [name, q] : other) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, q);
    } else if (it->second < q) {
      it->second = q;
    }
  }
}

// ContainerRequests: spec requests, or with status resources the max of spec, allocated and
// actuated requests (component-helpers determineContainerReqs for a feasible resize).
ResourceList ContainerRequests(const Pod& pod, const Container& c,
                               const PodRequestOptions& options) {
  if (!options.use_status_resources) {
    return c.requests;
  }
  for (const ContainerStatusResources& cs : pod.container_statuses) {
    if (cs.name != c.name) {
      continue;
    }
    if (!cs.resources_requests.has_value() && !cs.allocated_resources.has_value()) {
      break;
    }
    ResourceList out = c.requests;
    if (cs.resources_requests) {
      MaxList(out, *cs.resources_requests);
    }
    if (cs.allocated_resources) {
      MaxList(out, *cs.allocated_resources);
    }
    return out;
  }
  return c.requests;
}

}  // namespace

Resource Resource::FromResourceList(const ResourceList& list) {
  Resource r;
  for (const auto& [name, q] : list) {
    if (name == kResourceCpu) {
      r.milli_cpu = q.MilliValue();
    } else if (name == kResourceMemory) {
      r.memory = q.Value();
    } else if (name == kResourceEphemeralStorage) {
      r.ephemeral_storage = q.Value();
    } else if (name == kResourcePods) {
      r.allowed_pod_number = q.Value();
    } else if (IsScalarResourceName(name)) {
      r.scalar[name] = q.Value();
    }
  }
  return r;
}

Resource Resource::FromPodRequests(const ResourceList& list) {
  Resource r = FromResourceList(list);
  r.allowed_pod_number = 0;
  return r;
}

void Resource::Add(const Resource& other) {
  milli_cpu += other.milli_cpu;
  memory += other.memory;
  ephemeral_storage += other.ephemeral_storage;
  allowed_pod_number += other.allowed_pod_number;
  for (const auto& [name, v] : other.scalar) {
    scalar[name] += v;
  }
}

void Resource::Subtract(const Resource& other) {
  milli_cpu -= other.milli_cpu;
  memory -= other.memory;
  ephemeral_storage -= other.ephemeral_storage;
  allowed_pod_number -= other.allowed_pod_number;
  for (const auto& [name, v] : other.scalar) {
    scalar[name] -= v;
  }
}

int64_t Resource::Get(std::string_view name) const {
  if (name == kResourceCpu) {
    return milli_cpu;
  }
  if (name == kResourceMemory) {
    return memory;
  }
  if (name == kResourceEphemeralStorage) {
    return ephemeral_storage;
  }
  if (name == kResourcePods) {
    return allowed_pod_number;
  }
  auto it = scalar.find(name);
  return it == scalar.end() ? 0 : it->second;
}

PodRequestOptions PodRequestOptions::FromGates(const FeatureGates& gates, bool already_on_node) {
  PodRequestOptions o;
  o.pod_level_resources = gates.Enabled(kGatePodLevelResources);
  o.sidecars = gates.Enabled(kGateSidecarContainers);
  o.use_status_resources = already_on_node && gates.Enabled(kGateInPlacePodVerticalScaling);
  return o;
}

std::string FormatResourceAmount(std::string_view resource, int64_t amount) {
  if (resource == kResourceCpu) {
    return FormatMilliCpu(amount);
  }
  if (resource == kResourcePods) {
    return std::to_string(amount);
  }
  return FormatBytes(amount);
}

bool IsSupportedPodLevelResource(std::string_view name) {
  return name == kResourceCpu || name == kResourceMemory || IsHugePageResourceName(name);
}

bool HasRestartableInitContainer(const Pod& pod) {
  return std::any_of(pod.init_containers.begin(), pod.init_containers.end(),
                     [](const Container& c) { return c.restart_policy == "Always"; });
}

ResourceList ComputePodRequests(const Pod& pod, const PodRequestOptions& options) {
  ResourceList requests;
  for (const Container& c : pod.containers) {
    AddList(requests, ContainerRequests(pod, c, options));
  }
  // Init containers run one at a time before the app; sidecars keep running once started.
  ResourceList init_peak;
  ResourceList sidecar_sum;
  for (const Container& c : pod.init_containers) {
    ResourceList container = ContainerRequests(pod, c, options);
    if (options.sidecars && c.restart_policy == "Always") {
      AddList(requests, container);
      AddList(sidecar_sum, container);
      MaxList(init_peak, sidecar_sum);
    } else {
      ResourceList step = container;
      AddList(step, sidecar_sum);
      MaxList(init_peak, step);
    }
  }
  MaxList(requests, init_peak);
  if (options.pod_level_resources && pod.pod_level_requests.has_value()) {
    for (const auto& [name, q] : *pod.pod_level_requests) {
      if (IsSupportedPodLevelResource(name)) {
        requests[name] = q;
      }
    }
  }
  AddList(requests, pod.overhead);
  return requests;
}

}  // namespace nodegate::admit
