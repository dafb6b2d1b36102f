#pragma once
// Where the API server is and how to talk to it: in-cluster (the service account's token,
// re-read as the kubelet rotates it, and ca.crt; KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig
// file's current context (server, certificate-authority[-data], tls-server-name, token,
// tokenFile, client-certificate[-data] and client-key[-data]).

#include <map>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/tls/tls.h"

namespace nodegate::kube {

struct ClientConfig {
  std::string host;  // IP address or name, without brackets
  std::string port = "443";
  std::string server_name;  // the name the server's certificate must hold (default: host)
  tls::ClientTlsConfig tls;
  std::string token;       // a fixed bearer token
  std::string token_file;  // or a file read again for every request
  std::string source;      // "in-cluster" or the kubeconfig's path, for messages
  std::string context;     // the kubeconfig context used ("" in-cluster)
  // The namespace commands default to, as kubectl's: the context's namespace, in-cluster the
  // service account's; "" when neither names one (then "default").
  std::string namespace_name;
};

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// ProcessEnvironment: this process's environment as a map, for InClusterConfig and
// LoadKubeconfig's KUBECONFIG.
std::map<std::string, std::string> ProcessEnvironment();

// InClusterConfig: from the environment and `service_account_dir`.
Result<ClientConfig> InClusterConfig(const std::map<std::string, std::string>& env,
                                     const std::string& service_account_dir);
// LoadKubeconfig: the current context of a kubeconfig file (YAML or JSON), or the context
// named `context` (kubectl's --context); relative paths in it are relative to the file's
// folder, as kubectl reads them.
Result<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// LoadKubeconfigFiles: the files of KUBECONFIG (a colon-separated list) merged as kubectl
// merges them: files that do not exist are skipped, the first file to set current-context
// wins, and for clusters, users and contexts the first entry of a name wins (relative paths
// stay relative to the file that holds them).
Result<ClientConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const std::string& context = "");

// SplitKubeconfigList: KUBECONFIG's value into paths (empty entries dropped).
std::vector<std::string> SplitKubeconfigList(const std::string& value);

// ParseServer: "https://HOST[:PORT][/]" into host and port; http:// is refused.
Result<std::pair<std::string, std::string>> ParseServer(const std::string& url);

// BearerToken: the token to send now ("" for none).
Result<std::string> BearerToken(const ClientConfig& config);

}  // namespace nodegate::kube
