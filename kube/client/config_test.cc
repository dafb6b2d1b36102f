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
  ASSERT_TRUE(config.ok()) << config.error().message;
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
  ASSERT_TRUE(from_data.ok()) << from_data.error().message;
  EXPECT_EQ(from_data->host, "::1");
  EXPECT_EQ(from_data->port, "443");
  EXPECT_EQ(from_data->tls.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(*BearerToken(*from_data), "abc");
}

TEST_F(ConfigTest, KubeconfigErrorsNameTheProblem) {
  const std::string no_context = Write("a", "apiVersion: v1\nkind: Config\n");
  EXPECT_NE(LoadKubeconfig(no_context).error().message.find("no current-context"),
            std::string::npos);
  const std::string plain_http = Write("b", R"({"current-context": "c",
    "contexts": [{"name": "c", "context": {"cluster": "k"}}],
    "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:8080"}}]})");
  EXPECT_NE(LoadKubeconfig(plain_http).error().message.find("only https://"), std::string::npos);
  const std::string no_ca = Write("c", R"({"current-context": "c",
    "contexts": [{"name": "c", "context": {"cluster": "k"}}],
    "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1"}}]})");
  EXPECT_NE(LoadKubeconfig(no_ca).error().message.find("no certificate-authority"),
            std::string::npos);
}

TEST_F(ConfigTest, InClusterReadsTheServiceAccount) {
  Write("ca.crt", "CA");
  Write("token", "t1\n");
  auto config = InClusterConfig(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      dir_.string());
  ASSERT_TRUE(config.ok()) << config.error().message;
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

}  // namespace
}  // namespace nodegate::kube
