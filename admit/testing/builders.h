#pragma once
// Test builders for API objects, after pkg/scheduler/testing/wrappers.go: one line per object
// in a table test.
//
//   Pod p = MakePod("web").Node("n1").Container("c").HostPort("UDP/127.0.0.1/53").Obj();
//   Node n = MakeNode("n1").Capacity({{"cpu", "2"}, {"pods", "110"}}).Label("zone", "a").Obj();

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "admit/api/quantity.h"
#include "admit/api/types.h"

namespace nodegate::admit::testing {

using ResourcePairs = std::initializer_list<std::pair<const char*, const char*>>;

// Q: a quantity that must parse (test data).
Quantity Q(const std::string& text);

ResourceList Resources(ResourcePairs pairs);

// ParsePortSpec: "PROTO/IP/PORT" with any part empty ("/127.0.0.1/8080", "UDP//53").
ContainerPort ParsePortSpec(const std::string& spec);

class PodBuilder {
 public:
  explicit PodBuilder(std::string name);

  PodBuilder& Namespace(std::string ns);
  PodBuilder& Uid(std::string uid);
  PodBuilder& Node(std::string node_name);
  PodBuilder& Label(std::string key, std::string value);
  PodBuilder& Annotation(std::string key, std::string value);
  PodBuilder& HostNetwork();
  PodBuilder& Phase(std::string phase);
  PodBuilder& Priority(int32_t priority);
  PodBuilder& Os(std::string os);
  PodBuilder& SupplementalGroupsPolicy(std::string policy);
  PodBuilder& Static();  // kubernetes.io/config.source: file
  PodBuilder& Mirror();  // kubernetes.io/config.mirror
  PodBuilder& PriorityClassName(std::string name);
  PodBuilder& QosClass(std::string qos);  // status.qosClass
  PodBuilder& Source(std::string source);

  // Container: a new regular container with requests; later port calls apply to it.
  PodBuilder& Container(std::string name = "", ResourcePairs requests = {});
  // InitContainer / SidecarContainer: a new (restartable) init container.
  PodBuilder& InitContainer(std::string name = "", ResourcePairs requests = {});
  PodBuilder& SidecarContainer(std::string name = "", ResourcePairs requests = {});
  // Limits: limits of the last container; missing requests default to them (API defaulting).
  PodBuilder& Limits(ResourcePairs limits);
  // HostPort: "PROTO/IP/PORT" on the last container (one is created if none).
  PodBuilder& HostPort(const std::string& spec);
  // ContainerPort: a port with hostPort 0 (hostNetwork turns it into a host port).
  PodBuilder& ContainerPort(int32_t port, std::string protocol = "");
  PodBuilder& Overhead(ResourcePairs resources);
  PodBuilder& PodRequests(ResourcePairs resources);
  PodBuilder& PodLimits(ResourcePairs resources);  // missing pod-level requests default to them
  PodBuilder& ContainerStatus(std::string name, ResourcePairs allocated);

  PodBuilder& Toleration(std::string key, std::string op, std::string value, std::string effect);
  PodBuilder& NodeSelector(std::string key, std::string value);
  // NodeAffinityIn etc.: required affinity, one term per call unless AddToLastTerm.
  PodBuilder& RequiredAffinityTerm(std::initializer_list<NodeSelectorRequirement> expressions,
                                   std::initializer_list<NodeSelectorRequirement> fields = {});
  PodBuilder& EmptyRequiredAffinity();

  admit::Pod Obj() const;

 private:
  admit::Container& LastContainer();

  admit::Pod pod_;
  // The container later port calls apply to, by list and index (survives copies).
  bool last_is_init_ = false;
  bool has_last_ = false;
};

inline PodBuilder MakePod(std::string name = "pod") { return PodBuilder(std::move(name)); }

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name);
  NodeBuilder& Label(std::string key, std::string value);
  NodeBuilder& Taint(std::string key, std::string value, std::string effect);
  NodeBuilder& Unschedulable();
  NodeBuilder& Allocatable(ResourcePairs resources);
  NodeBuilder& SupplementalGroupsPolicySupported(bool supported);
  admit::Node Obj() const { return node_; }

 private:
  admit::Node node_;
};

inline NodeBuilder MakeNode(std::string name = "node1") { return NodeBuilder(std::move(name)); }

inline NodeSelectorRequirement Req(std::string key, std::string op,
                                   std::initializer_list<std::string> values = {}) {
  return NodeSelectorRequirement{std::move(key), std::move(op), values};
}

}  // namespace nodegate::admit::testing
