#include "lib/http/client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string_view>

#include "lib/http/transport.h"

namespace nodegate::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

constexpr std::string_view kNoResponseInTime = "no complete response in time";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool IsParseError(const beast::error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category();
}

// ReadError: what a failed read of the response says, from what the parser had got by then.
Error ReadError(const beast::error_code& ec, const bhttp::response_parser<bhttp::string_body>& p,
                const beast::flat_buffer& unparsed, size_t max_bytes) {
  if (ec == beast::error::timeout) {
    return Error(kErrIo, std::string(kNoResponseInTime));
  }
  if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit) {
    return Error(kErrIo, "response larger than " + std::to_string(max_bytes >> 20) + " MiB");
  }
  if (ec == bhttp::error::end_of_stream) {
    return Error(kErrIo, "empty reply");
  }
  if (ec == bhttp::error::partial_message) {
    if (!p.is_header_done()) {
      return Error(kErrIo, "reply cut short in its headers");
    }
    if (p.chunked()) {
      return Error(kErrIo, "reply cut short in its chunked body");
    }
    if (p.content_length()) {
      return Error(kErrIo, "reply cut short: " + std::to_string(p.get().body().size()) + " of " +
                               std::to_string(*p.content_length()) + " bytes");
    }
  }
  if (IsParseError(ec) && !p.is_header_done()) {
    // The header is parsed whole or not at all: the buffer still starts with the status line.
    const std::string_view raw(static_cast<const char*>(unparsed.data().data()),
                               unparsed.data().size());
    return Error(kErrIo, "not an HTTP/1.x response: \"" +
                             std::string(raw.substr(0, std::min(raw.find("\r\n"), size_t{40}))) +
                             "\"");
  }
  if (IsParseError(ec)) {
    return Error(kErrIo, "malformed response: " + ec.message());
  }
  return Error(kErrIo, "reading the response: " + ErrorText(ec));
}

}  // namespace

Result<Response> Get(const std::string& host, const std::string& port, const std::string& target,
                     std::chrono::steady_clock::time_point deadline, size_t max_bytes) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  auto never = [] { return false; };
  auto nothing = [] {};
  boost::system::error_code resolved;
  auto endpoints = Resolve(ioc, host, port, resolved);
  if (resolved) {
    return Error(kErrIo, "cannot resolve " + host + ": " + resolved.message());
  }
  stream.expires_at(deadline);
  beast::error_code ec = RunOne(
      ioc, [&](auto handler) { stream.async_connect(endpoints, handler); }, never, nothing);
  if (ec) {
    return Error(kErrIo, "cannot connect to " + host + ":" + port + ": " +
                             (ec == beast::error::timeout ? "Connection timed out" : ec.message()));
  }

  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, target, 11};
  request.set(bhttp::field::host, HostHeader(host, port, "80"));
  request.set(bhttp::field::user_agent, "nodegate");
  request.set(bhttp::field::accept, "*/*");
  request.keep_alive(false);
  ec = RunOne(
      ioc, [&](auto handler) { bhttp::async_write(stream, request, handler); }, never, nothing);
  if (ec) {
    return Error(kErrIo, ec == beast::error::timeout ? std::string(kNoResponseInTime)
                                                     : "sending the request: " + ErrorText(ec));
  }

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(
      std::min<size_t>(max_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser.body_limit(max_bytes);
  ec = RunOne(
      ioc, [&](auto handler) { bhttp::async_read(stream, buffer, parser, handler); }, never,
      nothing);
  if (ec) {
    return ReadError(ec, parser, buffer, max_bytes);
  }
  Response out;
  out.status = static_cast<int>(parser.get().result_int());
  out.reason = std::string(parser.get().reason());
  for (const auto& field : parser.get()) {
    out.headers[Lower(field.name_string())] = std::string(field.value());
  }
  out.body = std::move(parser.get().body());
  return out;
}

}  // namespace nodegate::http
