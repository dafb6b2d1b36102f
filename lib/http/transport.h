#pragma once
// The plumbing nodegate's HTTP clients share, on Boost.Beast and Asio: the API client
// (kube/client, HTTPS) and the plain GET of lib/http/client.h (--manifest-url). Each client
// drives one asynchronous operation at a time on a private io_context until it completes, its
// socket's expiry passes, or the caller asks it to stop.
//
//   beast::error_code ec = http::RunOne(ioc, [&](auto handler) {
//     stream.async_connect(endpoints, handler);
//   }, [&] { return cancelled.load(); }, [&] { stream.socket().close(ignored); });

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace nodegate::http {

// IsIpAddress: whether `host` is an IPv4 or IPv6 literal (no brackets).
bool IsIpAddress(const std::string& host);

// Resolve: the endpoints of host:port; an IP literal is taken as it is, without a lookup.
boost::asio::ip::tcp::resolver::results_type Resolve(boost::asio::io_context& ioc,
                                                     const std::string& host,
                                                     const std::string& port,
                                                     boost::system::error_code& ec);

// ErrorText: "timed out" for an expired socket, "cancelled" for an aborted operation, else the
// error's message.
std::string ErrorText(const boost::beast::error_code& ec);

// RunOne: starts one asynchronous operation with start(handler) and runs `ioc` until it
// completes. `stop` is looked at five times a second; once it says true, `abort` is called (it
// closes the socket) and the operation ends with operation_aborted.
template <class Start, class Stop, class Abort>
boost::beast::error_code RunOne(boost::asio::io_context& ioc, Start&& start, Stop&& stop,
                                Abort&& abort) {
  std::optional<boost::beast::error_code> result;
  std::forward<Start>(start)([&result](boost::beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  while (!result) {
    ioc.run_for(std::chrono::milliseconds(200));
    if (!result && stop()) {
      abort();
      ioc.restart();
      ioc.run();
      result = boost::asio::error::operation_aborted;
    }
  }
  return *result;
}

}  // namespace nodegate::http
