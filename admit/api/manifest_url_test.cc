#include "admit/api/manifest_url.h"

#include <gtest/gtest.h>

#include "lib/http/testing/http_server.h"

namespace nodegate::admit {
namespace {

using http::testing::LocalHttpServer;

TEST(ManifestUrlTest, ParseHttpUrl) {
  struct Case {
    std::string url;
    std::string host, port, target, error;
  };
  const std::vector<Case> cases = {
      {"http://10.0.0.1:8080/pods.yaml", "10.0.0.1", "8080", "/pods.yaml", ""},
      {"HTTP://example.com", "example.com", "80", "/", ""},
      {"http://example.com?x=1#frag", "example.com", "80", "/?x=1", ""},
      {"http://[::1]:81/a/b?c", "::1", "81", "/a/b?c", ""},
      {"https://example.com/", "", "", "",
       "https:// is not supported, only http:// (the kubelet reads both)"},
      {"ftp://example.com/", "", "", "", "not an http:// URL"},
      {"http://user:pw@example.com/", "", "", "", "user:password@ in the URL is not supported"},
      {"http://example.com:0/", "", "", "", "invalid port \"0\""},
      {"http://example.com:99999/", "", "", "", "invalid port \"99999\""},
      {"http:///path", "", "", "", "no host"},
      {"http://h/a b", "", "", "", "spaces or control characters in the path"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    auto got = ParseHttpUrl(c.url);
    ASSERT_EQ(got.ok(), c.error.empty()) << (got.ok() ? "" : got.error().msg);
    if (!got.ok()) {
      EXPECT_EQ(got.error().msg, c.error);
      continue;
    }
    EXPECT_EQ(got->host, c.host);
    EXPECT_EQ(got->port, c.port);
    EXPECT_EQ(got->target, c.target);
  }
}

constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: kube-system}
spec:
  containers: [{name: a, resources: {requests: {cpu: 100m}}}]
)";

TEST(ManifestUrlTest, PodsFromHttpSourceAsTheKubeletReadsThem) {
  const std::string url = "http://h/pods";
  std::string note;
  auto pods = PodsFromHttpSource(kPod, url, "worker-1", &note);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  ASSERT_EQ(pods->size(), 1u);
  const Pod& p = pods->front();
  EXPECT_EQ(p.Key(), "kube-system/agent-worker-1");
  EXPECT_EQ(p.node_name, "worker-1");
  EXPECT_EQ(p.annotations.at("kubernetes.io/config.source"), "http");
  EXPECT_TRUE(p.IsStaticPod());
  EXPECT_TRUE(p.tolerations.empty()) << "only the file source adds the NoExecute toleration";
  EXPECT_EQ(p.source, url);
  EXPECT_EQ(note, "");

  const std::string list =
      R"({"apiVersion": "v1", "kind": "PodList", "items": [
          {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}},
          {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c"}]}}]})";
  pods = PodsFromHttpSource(list, url, "worker-1", &note);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[1].Key(), "default/b-worker-1");

  pods = PodsFromHttpSource(std::string(kPod) + "---\n" + kPod, url, "worker-1", &note);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  EXPECT_EQ(pods->size(), 1u) << "a second document is not read";
  EXPECT_EQ(note,
            "http://h/pods: 1 document(s) after the first ignored: the kubelet's HTTP source "
            "reads only the first");
}

TEST(ManifestUrlTest, PodsFromHttpSourceRefusesWhatTheKubeletRefuses) {
  struct Case {
    std::string name;
    std::string body;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"a List", "apiVersion: v1\nkind: List\nitems: []\n",
       "u: the kubelet's HTTP source takes a v1 Pod or a v1 PodList, got apiVersion \"v1\", kind "
       "\"List\""},
      {"no kind", "apiVersion: v1\nmetadata: {name: a}\n",
       "u: the kubelet's HTTP source takes a v1 Pod or a v1 PodList, got apiVersion \"v1\", kind "
       "\"\""},
      {"a JSON array", R"([{"apiVersion": "v1", "kind": "Pod"}])",
       "u: the kubelet's HTTP source takes a v1 Pod or a v1 PodList, got no object"},
      {"a Pod without containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {}\n",
       "u: spec.containers: required: a pod needs at least one container"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = PodsFromHttpSource(c.body, "u", "n", nullptr);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().msg, c.want);
  }
}

// The client against a loopback server: redirects, statuses, the deadline and the size cap.
TEST(ManifestUrlTest, FetchUrl) {
  LocalHttpServer server;
  server.Route("/pod.yaml", LocalHttpServer::Ok(kPod));
  server.Route("/moved", LocalHttpServer::Status("302 Found", "Location: /pod.yaml\r\n"));
  server.Route("/loop", LocalHttpServer::Status("301 Moved Permanently", "Location: /loop\r\n"));
  server.Route("/hang", LocalHttpServer::Hang());
  server.Route("/endless", LocalHttpServer::Endless());
  server.Route("/empty", LocalHttpServer::Ok(""));
  FetchOptions options;
  options.timeout = std::chrono::milliseconds(1500);

  auto body = FetchUrl(server.Url("/pod.yaml"), options);
  ASSERT_TRUE(body.ok()) << body.error().msg;
  EXPECT_EQ(*body, kPod);
  body = FetchUrl(server.Url("/moved"), options);
  ASSERT_TRUE(body.ok()) << body.error().msg;
  EXPECT_EQ(*body, kPod);

  const std::map<std::string, std::string> errors = {
      {"/missing", ": 404 Not Found"},
      {"/loop", ": stopped after 10 redirects"},
      {"/hang", ": no complete response in time (timeout 1500 ms)"},
  };
  for (const auto& [path, want] : errors) {
    SCOPED_TRACE(path);
    body = FetchUrl(server.Url(path), options);
    ASSERT_FALSE(body.ok());
    EXPECT_EQ(body.error().msg, server.Url(path) + want);
  }
  options.max_bytes = 1 << 20;
  body = FetchUrl(server.Url("/endless"), options);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.error().msg, server.Url("/endless") + ": response larger than 1 MiB");

  std::string note;
  auto pods = LoadManifestUrl(server.Url("/empty"), "n", options, &note);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  EXPECT_TRUE(pods->empty());
  EXPECT_EQ(note, server.Url("/empty") +
                      ": zero-length data received; the kubelet runs no pods "
                      "from it");
}

}  // namespace
}  // namespace nodegate::admit
