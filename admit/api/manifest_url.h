#pragma once
// The kubelet's other static-pod source, --manifest-url (pkg/kubelet/config/http.go): one GET,
// and the body is either a single v1 Pod or a v1 PodList, JSON or YAML. Of a multi-document
// YAML body only the first document counts, as the kubelet's YAML-to-JSON step reads only that
// one. Every pod gets the source's defaults (pkg/kubelet/config/common.go applyDefaults with
// isFile false): name suffixed with "-<node>", namespace "default" when empty, nodeName, and
// kubernetes.io/config.source: http, which makes it a static, critical pod; unlike the file
// source no NoExecute toleration is added.
//
// The client is lib/http's plain HTTP/1.1 GET (Boost.Beast, as the API client's), with a
// deadline for the whole exchange (the kubelet's client gives up after 10 s), a cap on the
// response size, and up to 10 redirects (as Go's client), followed here. https:// is refused:
// the kubelet reads it, this tool cannot.
//
//   auto pods = LoadManifestUrl("http://10.0.0.1:8080/pods.yaml", "worker-1", {}, &note);

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "lib/base/result.h"

namespace nodegate::admit {

struct HttpUrl {
  std::string host;  // without brackets for IPv6 literals
  std::string port = "80";
  std::string target = "/";  // path and query
};

// ParseHttpUrl: http://HOST[:PORT][/PATH][?QUERY]; fragments are dropped.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

struct FetchOptions {
  std::chrono::milliseconds timeout{10000};
  size_t max_bytes = 256u << 20;  // the response's header, and its body, each
  int max_redirects = 10;
};

// FetchUrl: the body of a 200 response to GET url. Errors start with the URL.
Result<std::string> FetchUrl(const std::string& url, const FetchOptions& options);

// PodsFromHttpSource: the pods a body holds, with the HTTP source's defaults for `node_name`.
// `note` (optional) receives what the kubelet silently ignores (documents after the first).
Result<std::vector<Pod>> PodsFromHttpSource(std::string_view body, const std::string& url,
                                            const std::string& node_name, std::string* note);

// LoadManifestUrl: FetchUrl + PodsFromHttpSource. An empty body is no pods (the kubelet runs
// none from it), with a note.
Result<std::vector<Pod>> LoadManifestUrl(const std::string& url, const std::string& node_name,
                                         const FetchOptions& options, std::string* note);

}  // namespace nodegate::admit
