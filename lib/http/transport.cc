#include "lib/http/transport.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/error.hpp>

#include "lib/http/client.h"

namespace nodegate::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

tcp::resolver::results_type Resolve(asio::io_context& ioc, const std::string& host,
                                    const std::string& port, boost::system::error_code& ec) {
  if (IsIpAddress(host)) {
    const tcp::endpoint ep(asio::ip::make_address(host), static_cast<uint16_t>(std::stoul(port)));
    return tcp::resolver::results_type::create(ep, host, port);
  }
  tcp::resolver resolver(ioc);
  return resolver.resolve(host, port, ec);
}

std::string HostHeader(const std::string& host, const std::string& port,
                       const std::string& default_port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + (port == default_port ? "" : ":" + port);
}

std::string ErrorText(const boost::beast::error_code& ec) {
  if (ec == boost::beast::error::timeout) {
    return "timed out";
  }
  if (ec == asio::error::operation_aborted) {
    return "cancelled";
  }
  return ec.message();
}

}  // namespace nodegate::http
