#include "admit/testing/builders.h"

#include <cstdlib>
#include <iostream>

namespace nodegate::admit::testing {

Quantity Q(const std::string& text) {
  auto q = Quantity::Parse(text);
  if (!q.ok()) {
    std::cerr << "test data: bad quantity " << text << ": " << q.error().msg << "\n";
    std::abort();
  }
  return *q;
}

ResourceList Resources(ResourcePairs pairs) {
  ResourceList out;
  for (const auto& [name, value] : pairs) {
    out[name] = Q(value);
  }
  return out;
}

ContainerPort ParsePortSpec(const std::string& spec) {
  ContainerPort p;
  const size_t first = spec.find('/');
  const size_t second = spec.find('/', first + 1);
  p.protocol = spec.substr(0, first);
  p.host_ip = spec.substr(first + 1, second - first - 1);
  p.host_port = std::atoi(spec.substr(second + 1).c_str());
  p.container_port = p.host_port;
  return p;
}

PodBuilder::PodBuilder(std::string name) {
  pod_.name = std::move(name);
  pod_.namespace_name = "default";
  pod_.uid = pod_.name;
}

PodBuilder& PodBuilder::Namespace(std::string ns) {
  pod_.namespace_name = std::move(ns);
  return *this;
}
PodBuilder& PodBuilder::Uid(std::string uid) {
  pod_.uid = std::move(uid);
  return *this;
}
PodBuilder& PodBuilder::Node(std::string node_name) {
  pod_.node_name = std::move(node_name);
  return *this;
}
PodBuilder& PodBuilder::Label(std::string key, std::string value) {
  pod_.labels[std::move(key)] = std::move(value);
  return *this;
}
PodBuilder& PodBuilder::Annotation(std::string key, std::string value) {
  pod_.annotations[std::move(key)] = std::move(value);
  return *this;
}
PodBuilder& PodBuilder::HostNetwork() {
  pod_.host_network = true;
  return *this;
}
PodBuilder& PodBuilder::Phase(std::string phase) {
  pod_.phase = std::move(phase);
  return *this;
}
PodBuilder& PodBuilder::Priority(int32_t priority) {
  pod_.priority = priority;
  return *this;
}
PodBuilder& PodBuilder::Os(std::string os) {
  pod_.os_name = std::move(os);
  return *this;
}
PodBuilder& PodBuilder::SupplementalGroupsPolicy(std::string policy) {
  pod_.supplemental_groups_policy = std::move(policy);
  return *this;
}
PodBuilder& PodBuilder::Static() {
  return Annotation(std::string(kAnnotationConfigSource), "file");
}
PodBuilder& PodBuilder::Mirror() {
  return Annotation(std::string(kAnnotationConfigMirror), "mirror");
}
PodBuilder& PodBuilder::PriorityClassName(std::string name) {
  pod_.priority_class_name = std::move(name);
  return *this;
}
PodBuilder& PodBuilder::QosClass(std::string qos) {
  pod_.qos_class = std::move(qos);
  return *this;
}
PodBuilder& PodBuilder::Limits(ResourcePairs limits) {
  admit::Container& c = LastContainer();
  c.limits = Resources(limits);
  for (const auto& [name, q] : c.limits) {
    c.requests.emplace(name, q);
  }
  return *this;
}
PodBuilder& PodBuilder::PodLimits(ResourcePairs resources) {
  pod_.pod_level_limits = Resources(resources);
  if (!pod_.pod_level_requests.has_value()) {
    pod_.pod_level_requests.emplace();
  }
  for (const auto& [name, q] : pod_.pod_level_limits) {
    pod_.pod_level_requests->emplace(name, q);
  }
  return *this;
}
PodBuilder& PodBuilder::Source(std::string source) {
  pod_.source = std::move(source);
  return *this;
}

PodBuilder& PodBuilder::Container(std::string name, ResourcePairs requests) {
  if (name.empty()) {
    name = "c" + std::to_string(pod_.containers.size());
  }
  pod_.containers.push_back(admit::Container{std::move(name), {}, Resources(requests), ""});
  has_last_ = true;
  last_is_init_ = false;
  return *this;
}

PodBuilder& PodBuilder::InitContainer(std::string name, ResourcePairs requests) {
  if (name.empty()) {
    name = "init" + std::to_string(pod_.init_containers.size());
  }
  pod_.init_containers.push_back(admit::Container{std::move(name), {}, Resources(requests), ""});
  has_last_ = true;
  last_is_init_ = true;
  return *this;
}

PodBuilder& PodBuilder::SidecarContainer(std::string name, ResourcePairs requests) {
  InitContainer(std::move(name), requests);
  pod_.init_containers.back().restart_policy = "Always";
  return *this;
}

admit::Container& PodBuilder::LastContainer() {
  if (!has_last_) {
    Container();
  }
  return last_is_init_ ? pod_.init_containers.back() : pod_.containers.back();
}

PodBuilder& PodBuilder::HostPort(const std::string& spec) {
  LastContainer().ports.push_back(ParsePortSpec(spec));
  return *this;
}

PodBuilder& PodBuilder::ContainerPort(int32_t port, std::string protocol) {
  admit::ContainerPort p;
  p.container_port = port;
  p.protocol = std::move(protocol);
  LastContainer().ports.push_back(p);
  return *this;
}

PodBuilder& PodBuilder::Overhead(ResourcePairs resources) {
  pod_.overhead = Resources(resources);
  return *this;
}

PodBuilder& PodBuilder::PodRequests(ResourcePairs resources) {
  pod_.pod_level_requests = Resources(resources);
  return *this;
}

PodBuilder& PodBuilder::ContainerStatus(std::string name, ResourcePairs allocated) {
  ContainerStatusResources cs;
  cs.name = std::move(name);
  cs.allocated_resources = Resources(allocated);
  pod_.container_statuses.push_back(std::move(cs));
  return *this;
}

PodBuilder& PodBuilder::Toleration(std::string key, std::string op, std::string value,
                                   std::string effect) {
  pod_.tolerations.push_back(admit::Toleration{std::move(key), std::move(op), std::move(value),
                                               std::move(effect), std::nullopt});
  return *this;
}

PodBuilder& PodBuilder::NodeSelector(std::string key, std::string value) {
  pod_.node_selector[std::move(key)] = std::move(value);
  return *this;
}

PodBuilder& PodBuilder::RequiredAffinityTerm(
    std::initializer_list<NodeSelectorRequirement> expressions,
    std::initializer_list<NodeSelectorRequirement> fields) {
  if (!pod_.required_node_affinity) {
    pod_.required_node_affinity = admit::NodeSelector{};
  }
  pod_.required_node_affinity->terms.push_back(NodeSelectorTerm{expressions, fields});
  return *this;
}

PodBuilder& PodBuilder::EmptyRequiredAffinity() {
  pod_.required_node_affinity = admit::NodeSelector{};
  return *this;
}

admit::Pod PodBuilder::Obj() const {
  admit::Pod copy = pod_;
  if (copy.containers.empty()) {
    copy.containers.push_back(admit::Container{"c0", {}, {}, ""});
  }
  return copy;
}

NodeBuilder::NodeBuilder(std::string name) { node_.name = std::move(name); }

NodeBuilder& NodeBuilder::Label(std::string key, std::string value) {
  node_.labels[std::move(key)] = std::move(value);
  return *this;
}

NodeBuilder& NodeBuilder::Taint(std::string key, std::string value, std::string effect) {
  node_.taints.push_back(admit::Taint{std::move(key), std::move(value), std::move(effect)});
  return *this;
}

NodeBuilder& NodeBuilder::Unschedulable() {
  node_.unschedulable = true;
  return *this;
}

NodeBuilder& NodeBuilder::Allocatable(ResourcePairs resources) {
  node_.allocatable = Resources(resources);
  node_.capacity = node_.allocatable;
  return *this;
}

NodeBuilder& NodeBuilder::SupplementalGroupsPolicySupported(bool supported) {
  node_.supports_supplemental_groups_policy = supported;
  return *this;
}

}  // namespace nodegate::admit::testing
