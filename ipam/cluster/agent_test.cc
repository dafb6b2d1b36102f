#include "ipam/cluster/agent.h"

#include <gtest/gtest.h>

namespace nodegate::ipam::cluster {
namespace {

TEST(AgentProtocol, RequestRoundTrips) {
  AgentRequest request;
  request.env = {{"CNI_COMMAND", "ADD"}, {"CNI_CONTAINERID", "c1"}, {"KUBERNETES_NODE_NAME", "n"}};
  request.hostname = "host";
  request.stdin_data = std::string("{\"a\":\"\xc3\xa9\"}\n");
  auto decoded = DecodeAgentRequest(EncodeAgentRequest(request));
  ASSERT_TRUE(decoded.ok()) << decoded.error().msg;
  EXPECT_EQ(decoded->env, request.env);
  EXPECT_EQ(decoded->hostname, "host");
  EXPECT_EQ(decoded->stdin_data, request.stdin_data);
}

TEST(AgentProtocol, RefusesWhatThePluginNeverSends) {
  for (const char* bytes : {
           "",
           "null",
           "[]",
           "{}",
           R"({"agent":1})",
           R"({"agent":2,"env":{"CNI_COMMAND":"ADD"},"stdin":""})",
           R"({"agent":"1","env":{"CNI_COMMAND":"ADD"},"stdin":""})",
           R"({"agent":1,"env":{"CNI_COMMAND":"VERSION"},"stdin":""})",
           R"({"agent":1,"env":{"CNI_COMMAND":"ADD","PATH":"/x"},"stdin":""})",
           R"({"agent":1,"env":{"CNI_COMMAND":"ADD","CNI_ARGS":1},"stdin":""})",
           R"({"agent":1,"env":{"CNI_COMMAND":"ADD"},"stdin":{}})",
           R"({"agent":1,"env":{"CNI_COMMAND":"ADD"},"stdin":"","hostname":2})",
           R"({"agent":1,"env":{"CNI_COMMAND":"ADD"},"stdin":"","x":2})",
       }) {
    auto decoded = DecodeAgentRequest(bytes);
    EXPECT_FALSE(decoded.ok()) << bytes;
  }
}

TEST(AgentProtocol, AnswerRoundTripsAndIsStrict) {
  auto decoded = DecodeAgentAnswer(EncodeAgentAnswer({1, "{\"code\":11}"}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->exit_status, 1);
  EXPECT_EQ(decoded->stdout_data, "{\"code\":11}");
  for (const char* bytes : {"", "{}", R"({"exit":2,"stdout":""})", R"({"exit":0})",
                            R"({"exit":0,"stdout":1})", R"({"exit":0,"stdout":"","x":1})"}) {
    EXPECT_FALSE(DecodeAgentAnswer(bytes).ok()) << bytes;
  }
}

}  // namespace
}  // namespace nodegate::ipam::cluster
