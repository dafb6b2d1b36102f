#include "kube/client/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace nodegate::kube {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("webhook_config_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

// "-----BEGIN CERTIFICATE-----\n" in base64.
constexpr const char* kPemHeadBase64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==";

TEST_F(ConfigTest, KubeconfigCurrentContextWithDataAndRelativeFiles) {
  Write("token", "secret-token\n");
  Write("ca.crt", "-----BEGIN CERTIFICATE-----\n");
  const std::string path = Write("kubeconfig", R"(apiVersion: v1
kind: Config
current-context: test
contexts:
- name: other
  context: {cluster: nowhere, user: nobody}
- name: test
  context: {cluster: local, user: admin}
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: ca.crt
    tls-server-name: kubernetes.default.svc
users:
- name: admin
  user:
    tokenFile: token
)");
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->host, "127.0.0.1");
  EXPECT_EQ(config->port, "6443");
  EXPECT_EQ(config->server_name, "kubernetes.default.svc");
  EXPECT_EQ(config->tls.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(config->token_file, (dir_ / "token").string());
  auto token = BearerToken(*config);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "secret-token");
  // The token file is read again: a rotated token is used at once.
  Write("token", "rotated\n");
  EXPECT_EQ(*BearerToken(*config), "rotated");

  const std::string data = Write("kubeconfig-data", std::string(R"({"current-context": "c",
    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    "clusters": [{"name": "k", "cluster": {"server": "https://[::1]",
                  "certificate-authority-data": ")") + kPemHeadBase64 +
                                                        R"("}}],
    "users": [{"name": "u", "user": {"token": "abc"}}]})");
  auto from_data = LoadKubeconfig(data);
  ASSERT_TRUE(from_data.ok()) << from_data.error().msg;
  EXPECT_EQ(from_data->host, "::1");
  EXPECT_EQ(from_data->port, "443");
  EXPECT_EQ(from_data->tls.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(*BearerToken(*from_data), "abc");
}

TEST_F(ConfigTest, KubeconfigErrorsNameTheProblem) {
  const std::string no_context = Write("a", "apiVersion: v1\nkind: Config\n");
  EXPECT_NE(LoadKubeconfig(no_context).error().msg.find("no current-context"), std::string::npos);
  const std::string plain_http = Write("b", R"({"current-context": "c",
    "contexts": [{"name": "c", "context": {"cluster": "k"}}],
    "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:8080"}}]})");
  EXPECT_NE(LoadKubeconfig(plain_http).error().msg.find("only https://"), std::string::npos);
  const std::string no_ca = Write("c", R"({"current-context": "c",
    "contexts": [{"name": "c", "context": {"cluster": "k"}}],
    "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1"}}]})");
  EXPECT_NE(LoadKubeconfig(no_ca).error().msg.find("no certificate-authority"), std::string::npos);
}

TEST_F(ConfigTest, InClusterReadsTheServiceAccount) {
  Write("ca.crt", "CA");
  Write("token", "t1\n");
  auto config = InClusterConfig(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      dir_.string());
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->host, "10.96.0.1");
  EXPECT_EQ(config->server_name, "kubernetes.default.svc");
  EXPECT_EQ(config->tls.ca_pem, "CA");
  EXPECT_EQ(*BearerToken(*config), "t1");
  EXPECT_FALSE(InClusterConfig({}, dir_.string()).ok());
}

TEST(ParseServer, Forms) {
  EXPECT_EQ(ParseServer("https://api.example:6443")->first, "api.example");
  EXPECT_EQ(ParseServer("https://api.example/")->second, "443");
  EXPECT_EQ(ParseServer("https://[fd00::1]:8443")->first, "fd00::1");
  EXPECT_FALSE(ParseServer("https://h:0").ok());
  EXPECT_FALSE(ParseServer("https://h/prefix").ok());
  EXPECT_FALSE(ParseServer("ftp://h").ok());
}

TEST_F(ConfigTest, ContextChosenAndNamespace) {
  Write("ca.crt", "-----BEGIN CERTIFICATE-----\n");
  const std::string path = Write("kubeconfig", R"(current-context: a
contexts:
- name: a
  context: {cluster: ca, user: ua}
- name: b
  context: {cluster: cb, user: ua, namespace: team-b}
clusters:
- name: ca
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.crt}
- name: cb
  cluster: {server: "https://10.0.0.2", certificate-authority: ca.crt}
users:
- name: ua
  user: {token: t}
)");
  auto a = LoadKubeconfig(path);
  ASSERT_TRUE(a.ok()) << a.error().msg;
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->context, "a");
  EXPECT_EQ(a->namespace_name, "");
  auto b = LoadKubeconfig(path, "b");
  ASSERT_TRUE(b.ok()) << b.error().msg;
  EXPECT_EQ(b->host, "10.0.0.2");
  EXPECT_EQ(b->port, "443");
  EXPECT_EQ(b->namespace_name, "team-b");
  auto none = LoadKubeconfig(path, "c");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().msg.find("no context named \"c\""), std::string::npos);
}

TEST_F(ConfigTest, KubeconfigListMergedAsKubectlMergesIt) {
  fs::create_directories(dir_ / "one");
  fs::create_directories(dir_ / "two");
  Write("one/ca.crt", "CA ONE");
  Write("two/ca.crt", "CA TWO");
  Write("two/token", "tok\n");
  const std::string one = Write("one/config", R"(current-context: first
contexts:
- name: first
  context: {cluster: shared, user: u}
clusters:
- name: shared
  cluster: {server: "https://10.0.0.1", certificate-authority: ca.crt}
)");
  const std::string two = Write("two/config", R"(current-context: second
contexts:
- name: second
  context: {cluster: shared, user: u}
clusters:
- name: shared
  cluster: {server: "https://10.9.9.9", certificate-authority: ca.crt}
users:
- name: u
  user: {tokenFile: token}
)");
  const std::vector<std::string> paths =
      SplitKubeconfigList((dir_ / "missing").string() + "::" + one + ":" + two);
  ASSERT_EQ(paths.size(), 3u);
  auto merged = LoadKubeconfigFiles(paths);
  ASSERT_TRUE(merged.ok()) << merged.error().msg;
  EXPECT_EQ(merged->context, "first");      // the first current-context
  EXPECT_EQ(merged->host, "10.0.0.1");      // the first cluster of that name
  EXPECT_EQ(merged->tls.ca_pem, "CA ONE");  // relative to its own file
  EXPECT_EQ(merged->token_file, (dir_ / "two" / "token").string());
  auto second = LoadKubeconfigFiles(paths, "second");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->host, "10.0.0.1");
  EXPECT_FALSE(LoadKubeconfigFiles({(dir_ / "none").string()}).ok());
}

TEST_F(ConfigTest, InClusterNamespace) {
  fs::create_directories(dir_ / "sa");
  Write("sa/ca.crt", "CA");
  Write("sa/token", "t");
  Write("sa/namespace", "nodegate\n");
  auto config = InClusterConfig(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      (dir_ / "sa").string());
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->namespace_name, "nodegate");
}

}  // namespace
}  // namespace nodegate::kube
