#include "kube/client/config.h"

#include <cctype>
#include <filesystem>
#include <initializer_list>

#include "admit/api/load.h"
#include "lib/base/base64.h"
#include "lib/base/result.h"

extern char** environ;

namespace nodegate::kube {
namespace {

using nlohmann::json;

constexpr size_t kMaxConfigBytes = 16u << 20;

Result<std::string> ReadSmallFile(const std::string& path) {
  NG_ASSIGN_OR_RETURN(auto text, admit::ReadInput(path));
  if (text.size() > kMaxConfigBytes) {
    return Error(kErrInvalidConfig, path + ": larger than 16 MiB");
  }
  return text;
}

// The kubeconfig's *-data fields: line breaks of a pasted value skipped, padding optional.
Result<std::string> DecodeBase64(const std::string& in, const std::string& field) {
  std::optional<std::string> out = Base64Decode(in, Base64Input::kLenient);
  if (!out) return Error(kErrInvalidConfig, field + ": not base64");
  return std::move(*out);
}

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Named: the entry of a kubeconfig list ("clusters", "users", "contexts") with that name.
Result<json> Named(const json& config, const char* list, const char* inner, const std::string& name,
                   const std::string& where) {
  auto items = config.find(list);
  if (items != config.end() && items->is_array()) {
    for (const json& item : *items) {
      if (item.is_object() && Str(item, "name") == name) {
        auto value = item.find(inner);
        if (value != item.end() && value->is_object()) {
          return *value;
        }
        return json::object();
      }
    }
  }
  return Error(kErrInvalidConfig, where + ": no " + std::string(inner) + " named \"" + name + "\"");
}

// PemFrom: "<field>-data" (base64) or "<field>" (a path, relative to the kubeconfig).
Result<std::string> PemFrom(const json& object, const std::string& field,
                            const std::filesystem::path& base, const std::string& where) {
  const std::string data = Str(object, (field + "-data").c_str());
  if (!data.empty()) {
    return DecodeBase64(data, where + ": " + field + "-data");
  }
  std::string path = Str(object, field.c_str());
  if (path.empty()) {
    return std::string();
  }
  if (std::filesystem::path(path).is_relative()) {
    path = (base / path).string();
  }
  return ReadSmallFile(path);
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseServer(const std::string& url) {
  constexpr std::string_view kScheme = "https://";
  if (url.rfind(kScheme, 0) != 0) {
    return Error(kErrInvalidConfig, "server " + url + ": only https:// is supported");
  }
  std::string rest = url.substr(kScheme.size());
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos) {
      return Error(kErrInvalidConfig, "server " + url + ": a path prefix is not supported");
    }
    rest.resize(slash);
  }
  std::string host = rest;
  std::string port = "443";
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) {
      return Error(kErrInvalidConfig, "server " + url + ": unclosed [");
    }
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') {
        return Error(kErrInvalidConfig, "server " + url + ": expected :PORT after ]");
      }
      port = rest.substr(close + 2);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535) {
    return Error(kErrInvalidConfig, "server " + url + ": expected https://HOST[:PORT]");
  }
  return std::pair{host, port};
}

Result<ClientConfig> InClusterConfig(const std::map<std::string, std::string>& env,
                                     const std::string& service_account_dir) {
  auto host = env.find("KUBERNETES_SERVICE_HOST");
  auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || host->second.empty() || port == env.end() || port->second.empty()) {
    return Error(
        kErrInvalidConfig,
        "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
        "(give --kubeconfig)");
  }
  ClientConfig config;
  config.source = "in-cluster";
  config.host = host->second;
  config.port = port->second;
  // The API server's certificate names the service, not the address the variables hold.
  config.server_name = "kubernetes.default.svc";
  NG_ASSIGN_OR_RETURN(auto ca, ReadSmallFile(service_account_dir + "/ca.crt"));
  config.tls.ca_pem = std::move(ca);
  config.token_file = service_account_dir + "/token";
  if (std::filesystem::exists(service_account_dir + "/namespace")) {
    auto ns = ReadSmallFile(service_account_dir + "/namespace");
    if (ns.ok()) {
      config.namespace_name = *ns;
      while (!config.namespace_name.empty() &&
             std::isspace(static_cast<unsigned char>(config.namespace_name.back()))) {
        config.namespace_name.pop_back();
      }
    }
  }
  NG_RETURN_IF_ERROR(BearerToken(config));
  return config;
}

namespace {

Result<json> ReadKubeconfig(const std::string& path) {
  NG_ASSIGN_OR_RETURN(auto text, ReadSmallFile(path));
  NG_ASSIGN_OR_RETURN(auto documents, admit::ParseDocuments(text, path));
  if (documents.empty() || !documents.front().value.is_object()) {
    return Error(kErrInvalidConfig, path + ": not a kubeconfig");
  }
  return std::move(documents.front().value);
}

// Absolute: the file paths a cluster or user entry names, made absolute against `base` (so
// that entries merged from several files keep pointing where their file meant).
void Absolute(json& config, const char* list, const char* inner,
              std::initializer_list<const char*> fields, const std::filesystem::path& base) {
  auto items = config.find(list);
  if (items == config.end() || !items->is_array()) {
    return;
  }
  for (json& item : *items) {
    if (!item.is_object() || !item.contains(inner) || !item[inner].is_object()) {
      continue;
    }
    for (const char* field : fields) {
      json& entry = item[inner];
      auto it = entry.find(field);
      if (it != entry.end() && it->is_string() && !it->get<std::string>().empty() &&
          std::filesystem::path(it->get<std::string>()).is_relative()) {
        *it = (base / it->get<std::string>()).string();
      }
    }
  }
}

Result<ClientConfig> FromKubeconfig(const json& config, const std::filesystem::path& base,
                                    const std::string& path, const std::string& wanted_context) {
  const std::string context_name =
      wanted_context.empty() ? Str(config, "current-context") : wanted_context;
  if (context_name.empty()) {
    return Error(kErrInvalidConfig, path + ": no current-context (give --context)");
  }
  NG_ASSIGN_OR_RETURN(auto context, Named(config, "contexts", "context", context_name, path));
  NG_ASSIGN_OR_RETURN(auto cluster,
                      Named(config, "clusters", "cluster", Str(context, "cluster"), path));
  ClientConfig out;
  out.source = path;
  out.context = context_name;
  out.namespace_name = Str(context, "namespace");
  auto server = ParseServer(Str(cluster, "server"));
  if (!server.ok()) {
    return server.error().WithContext(path);
  }
  out.host = server->first;
  out.port = server->second;
  out.server_name = Str(cluster, "tls-server-name");
  if (auto skip = cluster.find("insecure-skip-tls-verify");
      skip != cluster.end() && skip->is_boolean()) {
    out.tls.insecure_skip_verify = skip->get<bool>();
  }
  NG_ASSIGN_OR_RETURN(auto ca, PemFrom(cluster, "certificate-authority", base, path));
  out.tls.ca_pem = std::move(ca);
  if (out.tls.ca_pem.empty() && !out.tls.insecure_skip_verify) {
    return Error(kErrInvalidConfig,
                 path + ": cluster \"" + Str(context, "cluster") +
                     "\" has no certificate-authority (the system's CAs are not read)");
  }
  const std::string user_name = Str(context, "user");
  if (!user_name.empty()) {
    NG_ASSIGN_OR_RETURN(auto user, Named(config, "users", "user", user_name, path));
    out.token = Str(user, "token");
    out.token_file = Str(user, "tokenFile");
    if (!out.token_file.empty() && std::filesystem::path(out.token_file).is_relative()) {
      out.token_file = (base / out.token_file).string();
    }
    NG_ASSIGN_OR_RETURN(auto cert, PemFrom(user, "client-certificate", base, path));
    NG_ASSIGN_OR_RETURN(auto key, PemFrom(user, "client-key", base, path));
    out.tls.cert_pem = std::move(cert);
    out.tls.key_pem = std::move(key);
  }
  return out;
}

}  // namespace

Result<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  NG_ASSIGN_OR_RETURN(auto config, ReadKubeconfig(path));
  return FromKubeconfig(config, std::filesystem::path(path).parent_path(), path, context);
}

Result<ClientConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const std::string& context) {
  json merged = {
      {"clusters", json::array()}, {"users", json::array()}, {"contexts", json::array()}};
  std::string read;
  for (const std::string& path : paths) {
    if (!std::filesystem::exists(path)) {
      continue;  // kubectl skips the missing files of KUBECONFIG
    }
    NG_ASSIGN_OR_RETURN(auto config, ReadKubeconfig(path));
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    Absolute(config, "clusters", "cluster", {"certificate-authority"}, base);
    Absolute(config, "users", "user", {"client-certificate", "client-key", "tokenFile"}, base);
    if (!merged.contains("current-context") && !Str(config, "current-context").empty()) {
      merged["current-context"] = Str(config, "current-context");
    }
    for (const char* list : {"clusters", "users", "contexts"}) {
      auto items = config.find(list);
      if (items == config.end() || !items->is_array()) {
        continue;
      }
      for (const json& item : *items) {
        const std::string name = item.is_object() ? Str(item, "name") : "";
        bool taken = false;
        for (const json& have : merged[list]) {
          taken = taken || Str(have, "name") == name;
        }
        if (!taken) {
          merged[list].push_back(item);
        }
      }
    }
    read += (read.empty() ? "" : ":") + path;
  }
  if (read.empty()) {
    std::string all;
    for (const std::string& p : paths) {
      all += (all.empty() ? "" : ":") + p;
    }
    return Error(kErrInvalidConfig, "no kubeconfig file found (looked at " + all + ")");
  }
  return FromKubeconfig(merged, std::filesystem::path("/"), read, context);
}

std::vector<std::string> SplitKubeconfigList(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t colon = value.find(':', start);
    const std::string item =
        value.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!item.empty()) {
      out.push_back(item);
    }
    if (colon == std::string::npos) {
      break;
    }
    start = colon + 1;
  }
  return out;
}

Result<std::string> BearerToken(const ClientConfig& config) {
  if (config.token_file.empty()) {
    return config.token;
  }
  NG_ASSIGN_OR_RETURN(auto text, ReadSmallFile(config.token_file));
  std::string token = std::move(text);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) {
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  return env;
}

}  // namespace nodegate::kube
