#include "explain/report/report.h"

#include <gtest/gtest.h>

#include "admit/api/yaml.h"
#include "lib/cli/output.h"

namespace nodegate::explain {
namespace {

using nlohmann::json;

PodExplanation Sample() {
  PodExplanation e;
  e.pod = "kube-system/coredns-node-x7k2q";
  e.owner = "DaemonSet kube-system/coredns-node";
  e.phase = "Pending";
  e.priority = 2000001000;
  e.summary =
      "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod "
      "ports, 1 node(s) didn't satisfy plugin(s) [NodeAffinity].";
  NodeVerdict v;
  v.node = "n3";
  v.state = NodeVerdict::State::kFails;
  v.plugin = "NodePorts";
  v.code = admit::Code::kUnschedulable;
  Finding f;
  f.reason = "node(s) didn't have free ports for the requested pod ports";
  f.explanation =
      "hostPort 53/UDP on 0.0.0.0 (container \"coredns\") is held by pod "
      "default/dns-test (no controller), container \"dns\" (53/UDP on 0.0.0.0)";
  f.ports.push_back(PortHolding{"53/UDP on 0.0.0.0", "UDP", 53, "coredns", "default/dns-test",
                                "dns", "53/UDP on 0.0.0.0", ""});
  v.findings.push_back(f);
  e.nodes.push_back(v);
  e.not_considered = 1;
  e.not_considered_reason = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
  e.not_considered_explanation = "the pod's required node affinity names other nodes";
  e.preemption.attempted = true;
  e.preemption.nodes.push_back(
      PreemptionNode{"n3", false, {}, {"No preemption victims found for incoming pod"}});
  return e;
}

TEST(ReportTest, TextStartsWithTheSummaryLineThenANodePerLine) {
  const std::string text = PodText(Sample());
  EXPECT_EQ(text.substr(0, text.find('\n')), *Sample().summary);
  EXPECT_NE(text.find("  n3  NodePorts: node(s) didn't have free ports"), std::string::npos);
  EXPECT_NE(text.find("held by pod default/dns-test"), std::string::npos);
  EXPECT_NE(text.find("1 other node: node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            std::string::npos);
  EXPECT_NE(text.find("preemption: cannot make room on any node"), std::string::npos);
}

TEST(ReportTest, JsonCarriesTheSameContent) {
  const json j = PodJson(Sample());
  EXPECT_EQ(j["summary"], *Sample().summary);
  EXPECT_EQ(j["nodes"][0]["reasons"][0]["ports"][0]["holder"], "default/dns-test");
  EXPECT_EQ(j["notConsidered"]["nodes"], 1);
  EXPECT_EQ(j["fits"], false);
}

TEST(ReportTest, YamlReadsBackAsTheSameValue) {
  json j = PodJson(Sample());
  j["odd"] = {{"quote\"d", "line\nbreak: # not a comment"},
              {"empty", json::object()},
              {"list", json::array({1, "-", json::array(), json::array({true, nullptr})})},
              {"unicode", "caf\xc3\xa9"}};
  auto docs = admit::YamlDocumentsToJson(cli::ToYaml(j));
  ASSERT_TRUE(docs.ok()) << docs.error().msg << "\n" << cli::ToYaml(j);
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0], j) << cli::ToYaml(j);
}

}  // namespace
}  // namespace nodegate::explain
