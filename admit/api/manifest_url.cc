#include "admit/api/manifest_url.h"

#include <algorithm>
#include <chrono>

#include "admit/api/load.h"
#include "lib/base/result.h"
#include "lib/http/client.h"
#include "lib/json/field.h"

namespace nodegate::admit {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// SplitHostPort: "host", "host:80", "[::1]:80".
Result<HttpUrl> SplitAuthority(std::string_view authority, HttpUrl url) {
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Error(kErrInvalidConfig, "missing ']' in the host");
    }
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(":")) {
      return Error(kErrInvalidConfig, "unexpected text after the host");
    }
    port = rest.empty() ? "" : rest.substr(1);
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    return Error(kErrInvalidConfig, "no host");
  }
  url.host = std::string(host);
  if (!port.empty()) {
    if (!AllDigits(port) || port.size() > 5 || std::stoi(std::string(port)) == 0 ||
        std::stoi(std::string(port)) > 65535) {
      return Error(kErrInvalidConfig, "invalid port \"" + std::string(port) + "\"");
    }
    url.port = std::string(port);
  }
  return url;
}

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// NextUrl: where a redirect points: an absolute http URL or an absolute path on the same host.
Result<HttpUrl> NextUrl(const HttpUrl& current, const std::string& location) {
  if (location.starts_with("/")) {
    HttpUrl next = current;
    next.target = location.substr(0, location.find('#'));
    return next;
  }
  return ParseHttpUrl(location);
}

}  // namespace

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  const std::string lower = Lower(url.substr(0, 8));
  if (lower.starts_with("https://")) {
    return Error(kErrInvalidConfig,
                 "https:// is not supported, only http:// (the kubelet reads both)");
  }
  if (!lower.starts_with("http://")) {
    return Error(kErrInvalidConfig, "not an http:// URL");
  }
  std::string_view rest = url.substr(7);
  rest = rest.substr(0, rest.find('#'));
  const size_t path_start = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_start);
  if (authority.find('@') != std::string_view::npos) {
    return Error(kErrInvalidConfig, "user:password@ in the URL is not supported");
  }
  HttpUrl out;
  if (path_start != std::string_view::npos) {
    out.target = std::string(rest.substr(path_start));
    if (out.target.starts_with("?")) {
      out.target = "/" + out.target;
    }
  }
  if (std::any_of(out.target.begin(), out.target.end(),
                  [](unsigned char c) { return c <= ' ' || c == 0x7f; })) {
    return Error(kErrInvalidConfig, "spaces or control characters in the path");
  }
  return SplitAuthority(authority, std::move(out));
}

Result<std::string> FetchUrl(const std::string& url, const FetchOptions& options) {
  auto parsed = ParseHttpUrl(url);
  if (!parsed.ok()) {
    return parsed.error().WithContext(url);
  }
  // One deadline for the whole exchange, redirects included (as the kubelet's client).
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  HttpUrl current = *parsed;
  for (int redirects = 0;; ++redirects) {
    auto response =
        http::Get(current.host, current.port, current.target, deadline, options.max_bytes);
    if (!response.ok()) {
      const std::string why = response.error().msg;
      return Error(kErrIo,
                   url + ": " + why +
                       (why == "no complete response in time"
                            ? " (timeout " + std::to_string(options.timeout.count()) + " ms)"
                            : ""));
    }
    auto location = response->headers.find("location");
    if (IsRedirect(response->status) && location != response->headers.end()) {
      if (redirects == options.max_redirects) {
        return Error(kErrIo, url + ": stopped after " + std::to_string(redirects) + " redirects");
      }
      auto next = NextUrl(current, location->second);
      if (!next.ok()) {
        return next.error().WithContext(url + ": redirect to " + location->second);
      }
      current = std::move(next).value();
      continue;
    }
    if (response->status != 200) {
      return Error(kErrIo, url + ": " + std::to_string(response->status) +
                               (response->reason.empty() ? "" : " " + response->reason));
    }
    return std::move(response->body);
  }
}

Result<std::vector<Pod>> PodsFromHttpSource(std::string_view body, const std::string& url,
                                            const std::string& node_name, std::string* note) {
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(body, url));
  if (docs.size() > 1 && note != nullptr) {
    *note = url + ": " + std::to_string(docs.size() - 1) +
            " document(s) after the first ignored: the kubelet's HTTP source reads only the "
            "first";
  }
  const Document& doc = docs.front();
  const nlohmann::json& v = doc.value;
  const std::string kind = json_field::StringOrEmpty(v, "kind");
  if (json_field::StringOrEmpty(v, "apiVersion") != "v1" || (kind != "Pod" && kind != "PodList")) {
    return Error(kErrDecode,
                 doc.where + ": the kubelet's HTTP source takes a v1 Pod or a v1 PodList, got " +
                     (v.is_object() ? "apiVersion \"" + json_field::StringOrEmpty(v, "apiVersion") +
                                          "\", kind \"" + kind + "\""
                                    : std::string("no object")));
  }
  NG_ASSIGN_OR_RETURN(auto pods, PodsFromDocuments({doc}, /*allow_workloads=*/false));
  for (Pod& pod : pods) {
    pod.source = url;
    ApplyKubeletSourceDefaults(pod, node_name, kConfigSourceHttp);
  }
  return pods;
}

Result<std::vector<Pod>> LoadManifestUrl(const std::string& url, const std::string& node_name,
                                         const FetchOptions& options, std::string* note) {
  NG_ASSIGN_OR_RETURN(auto body, FetchUrl(url, options));
  if (body.empty()) {
    if (note != nullptr) {
      *note = url + ": zero-length data received; the kubelet runs no pods from it";
    }
    return std::vector<Pod>();
  }
  return PodsFromHttpSource(body, url, node_name, note);
}

}  // namespace nodegate::admit
