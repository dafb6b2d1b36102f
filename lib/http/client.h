#pragma once
// Get: one plain HTTP/1.1 GET on a connection of its own (Boost.Beast, as the API client of
// kube/client), the whole exchange bounded by a deadline and the response by a size. Bodies
// with Content-Length, chunked, or running to the end of the connection. No TLS, no
// redirects: the caller follows Location itself (admit/api/manifest_url.cc, the kubelet's
// --manifest-url source).
//
//   auto got = http::Get("10.0.0.1", "8080", "/pods.yaml", Clock::now() + 10s, 256 << 20);
//   if (got.ok() && got->status == 200) Use(got->body);
//
// Errors (code kErrIo) name what failed: "cannot resolve HOST: ...", "cannot connect to
// HOST:PORT: ...", "no complete response in time", "response larger than N MiB", "empty reply",
// "reply cut short ...", "not an HTTP/1.x response: ...", "malformed response: ...".

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "lib/base/result.h"

namespace nodegate::http {

struct Response {
  int status = 0;
  std::string reason;                          // "Not Found"
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// Get: GET `target` (path and query) from host:port (host without brackets), finished by
// `deadline`; a response over `max_bytes` (its header or its body) is an error.
Result<Response> Get(const std::string& host, const std::string& port, const std::string& target,
                     std::chrono::steady_clock::time_point deadline, size_t max_bytes);

// HostHeader: the Host header's value: IPv6 literals in brackets, the port left out when it is
// `default_port` (give "" to always name it).
std::string HostHeader(const std::string& host, const std::string& port,
                       const std::string& default_port);

}  // namespace nodegate::http
