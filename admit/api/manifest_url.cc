#include "admit/api/manifest_url.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "admit/api/load.h"
#include "lib/base/result.h"
#include "lib/cni/json_field.h"
#include "lib/sys/fd.h"

namespace nodegate::admit {
namespace {

using Clock = std::chrono::steady_clock;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
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

// HeaderEnd: the offset just past "\r\n\r\n", or npos.
size_t HeaderEnd(std::string_view raw) {
  const size_t at = raw.find("\r\n\r\n");
  return at == std::string_view::npos ? at : at + 4;
}

Result<HttpResponse> ParseHead(std::string_view head) {
  HttpResponse r;
  const size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ' ||
      !AllDigits(status_line.substr(9, 3))) {
    return Error(kErrIo,
                 "not an HTTP/1.x response: \"" + std::string(status_line.substr(0, 40)) + "\"");
  }
  r.status = std::stoi(std::string(status_line.substr(9, 3)));
  r.status_line_rest = std::string(Trim(status_line.substr(9)));
  size_t pos = line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) {
      break;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Error(kErrIo, "malformed header line \"" + std::string(line.substr(0, 40)) + "\"");
    }
    r.headers[Lower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  return r;
}

// DecodeChunked: nullopt while more chunks are to come; an error when malformed.
Result<std::optional<std::string>> DecodeChunked(std::string_view data) {
  std::string body;
  size_t pos = 0;
  for (;;) {
    const size_t line_end = data.find("\r\n", pos);
    if (line_end == std::string_view::npos) {
      return std::optional<std::string>();
    }
    std::string_view size_text = Trim(data.substr(pos, line_end - pos));
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    size_t size = 0;
    if (size_text.empty() || size_text.size() > 15 ||
        !std::all_of(size_text.begin(), size_text.end(), ::isxdigit)) {
      return Error(kErrIo, "malformed chunk size \"" + std::string(size_text.substr(0, 20)) + "\"");
    }
    size = std::stoull(std::string(size_text), nullptr, 16);
    pos = line_end + 2;
    if (size == 0) {
      // Optional trailer fields, then an empty line.
      if (data.substr(pos, 2) == "\r\n" || data.find("\r\n\r\n", pos) != std::string_view::npos) {
        return std::optional<std::string>(std::move(body));
      }
      return std::optional<std::string>();
    }
    if (data.size() < pos + size + 2) {
      return std::optional<std::string>();
    }
    body.append(data.substr(pos, size));
    if (data.substr(pos + size, 2) != "\r\n") {
      return Error(kErrIo, "chunk not followed by CRLF");
    }
    pos += size + 2;
  }
}

// Deadline: the time left for the whole exchange.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout) : end_(Clock::now() + timeout) {}
  int RemainingMs() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
  }

 private:
  Clock::time_point end_;
};

// WaitFor: poll one fd for `events` until the deadline; false on timeout (errno ETIMEDOUT).
bool WaitFor(int fd, short events, const Deadline& deadline) {
  for (;;) {
    const int ms = deadline.RemainingMs();
    if (ms == 0) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms);
    if (n > 0) {
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return false;
    }
  }
}

Result<sys::UniqueFd> ConnectTo(const addrinfo& ai, const Deadline& deadline) {
  sys::UniqueFd fd(
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd.valid()) {
    return Error(kErrIo, std::string("socket: ") + std::strerror(errno));
  }
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0 && errno != EINPROGRESS) {
    return Error(kErrIo, std::strerror(errno));
  }
  if (!WaitFor(fd.get(), POLLOUT, deadline)) {
    return Error(kErrIo, std::strerror(errno));
  }
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    return Error(kErrIo, std::strerror(err));
  }
  return fd;
}

Result<sys::UniqueFd> Connect(const HttpUrl& url, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &list); rc != 0) {
    return Error(kErrIo, "cannot resolve " + url.host + ": " + ::gai_strerror(rc));
  }
  std::string last = "no address";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    auto fd = ConnectTo(*ai, deadline);
    if (fd.ok()) {
      ::freeaddrinfo(list);
      return fd;
    }
    last = fd.error().msg;
  }
  ::freeaddrinfo(list);
  return Error(kErrIo, "cannot connect to " + url.host + ":" + url.port + ": " + last);
}

nodegate::Status SendAll(int fd, std::string_view data, const Deadline& deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFor(fd, POLLOUT, deadline)) {
        return Error(kErrIo, std::strerror(errno));
      }
    } else {
      return Error(kErrIo, std::string("sending the request: ") + std::strerror(errno));
    }
  }
  return OkStatus();
}

// ReadResponse: reads until the response is complete, the server closes, the cap or the
// deadline.
Result<HttpResponse> ReadResponse(int fd, const Deadline& deadline, size_t max_bytes) {
  std::string raw;
  char buf[65536];
  for (;;) {
    if (!WaitFor(fd, POLLIN, deadline)) {
      return Error(kErrIo,
                   errno == ETIMEDOUT ? "no complete response in time" : std::strerror(errno));
    }
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      continue;
    }
    if (n < 0) {
      return Error(kErrIo, std::string("reading the response: ") + std::strerror(errno));
    }
    raw.append(buf, static_cast<size_t>(n));
    if (raw.size() > max_bytes) {
      return Error(kErrIo, "response larger than " + std::to_string(max_bytes >> 20) + " MiB");
    }
    NG_ASSIGN_OR_RETURN(auto parsed, ParseHttpResponse(raw, /*at_eof=*/n == 0));
    if (parsed.has_value()) {
      return std::move(*parsed);
    }
  }
}

Result<HttpResponse> Get(const HttpUrl& url, const Deadline& deadline, size_t max_bytes) {
  NG_ASSIGN_OR_RETURN(auto fd, Connect(url, deadline));
  const std::string host =
      (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) +
      (url.port == "80" ? "" : ":" + url.port);
  const std::string request = "GET " + url.target + " HTTP/1.1\r\nHost: " + host +
                              "\r\nUser-Agent: nodegate\r\nAccept: */*\r\n"
                              "Connection: close\r\n\r\n";
  NG_RETURN_IF_ERROR(SendAll(fd.get(), request, deadline));
  return ReadResponse(fd.get(), deadline, max_bytes);
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

Result<std::optional<HttpResponse>> ParseHttpResponse(std::string_view raw, bool at_eof) {
  const size_t head_end = HeaderEnd(raw);
  if (head_end == std::string_view::npos) {
    if (at_eof) {
      return Error(kErrIo, raw.empty() ? "empty reply" : "reply cut short in its headers");
    }
    return std::optional<HttpResponse>();
  }
  NG_ASSIGN_OR_RETURN(auto head, ParseHead(raw.substr(0, head_end)));
  std::string_view body = raw.substr(head_end);
  HttpResponse& r = head;
  if (auto te = r.headers.find("transfer-encoding");
      te != r.headers.end() && Lower(te->second).find("chunked") != std::string::npos) {
    NG_ASSIGN_OR_RETURN(auto decoded, DecodeChunked(body));
    if (!decoded.has_value()) {
      if (at_eof) {
        return Error(kErrIo, "reply cut short in its chunked body");
      }
      return std::optional<HttpResponse>();
    }
    r.body = std::move(*decoded);
    return std::optional<HttpResponse>(std::move(r));
  }
  if (auto cl = r.headers.find("content-length"); cl != r.headers.end()) {
    if (!AllDigits(cl->second) || cl->second.size() > 15) {
      return Error(kErrIo, "invalid Content-Length \"" + cl->second + "\"");
    }
    const size_t length = std::stoull(cl->second);
    if (body.size() < length) {
      if (at_eof) {
        return Error(kErrIo, "reply cut short: " + std::to_string(body.size()) + " of " +
                                 std::to_string(length) + " bytes");
      }
      return std::optional<HttpResponse>();
    }
    r.body = std::string(body.substr(0, length));
    return std::optional<HttpResponse>(std::move(r));
  }
  if (!at_eof) {
    return std::optional<HttpResponse>();  // the body ends with the connection
  }
  r.body = std::string(body);
  return std::optional<HttpResponse>(std::move(r));
}

Result<std::string> FetchUrl(const std::string& url, const FetchOptions& options) {
  auto parsed = ParseHttpUrl(url);
  if (!parsed.ok()) {
    return parsed.error().WithContext(url);
  }
  const Deadline deadline(options.timeout);
  HttpUrl current = *parsed;
  for (int redirects = 0;; ++redirects) {
    auto response = Get(current, deadline, options.max_bytes);
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
      return Error(kErrIo, url + ": " + response->status_line_rest);
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
  const std::string kind = cni::StringOrEmpty(v, "kind");
  if (cni::StringOrEmpty(v, "apiVersion") != "v1" || (kind != "Pod" && kind != "PodList")) {
    return Error(kErrDecode,
                 doc.where + ": the kubelet's HTTP source takes a v1 Pod or a v1 PodList, got " +
                     (v.is_object() ? "apiVersion \"" + cni::StringOrEmpty(v, "apiVersion") +
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
