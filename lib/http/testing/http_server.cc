#include "lib/http/testing/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace nodegate::http::testing {
namespace {

void Die(const char* what) {
  std::cerr << "LocalHttpServer: " << what << "\n";
  std::abort();
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

LocalHttpServer::Reply LocalHttpServer::Ok(const std::string& body) {
  return Status("200 OK", "Content-Type: application/yaml\r\n", body);
}

LocalHttpServer::Reply LocalHttpServer::Status(const std::string& status,
                                               const std::string& headers,
                                               const std::string& body) {
  return Raw("HTTP/1.1 " + status + "\r\n" + headers + "Content-Length: " +
             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

LocalHttpServer::LocalHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    Die("cannot listen on 127.0.0.1");
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

LocalHttpServer::~LocalHttpServer() {
  const char byte = 0;
  (void)!::write(stop_pipe_[1], &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void LocalHttpServer::Route(const std::string& path, Reply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_[path] = std::move(reply);
}

std::string LocalHttpServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

bool LocalHttpServer::WaitReadable(int fd) const {
  pollfd fds[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0) {
  }
  return (fds[1].revents & POLLIN) == 0;
}

void LocalHttpServer::Serve() {
  while (WaitReadable(listen_fd_)) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      Handle(fd);
      ::close(fd);
    }
  }
}

void LocalHttpServer::Handle(int fd) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && WaitReadable(fd)) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      return;
    }
    request.append(buf, static_cast<size_t>(n));
  }
  ++requests_;
  const size_t start = request.find(' ') + 1;
  const std::string path = request.substr(start, request.find(' ', start) - start);
  Reply reply = Status("404 Not Found");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = routes_.find(path); it != routes_.end()) {
      reply = it->second;
    }
  }
  switch (reply.kind) {
    case Reply::Kind::kRaw:
      SendAll(fd, reply.raw);
      return;
    case Reply::Kind::kHang:
      // Holds the connection until the client gives up (its read returns 0) or the test ends.
      while (WaitReadable(fd) && ::recv(fd, buf, sizeof(buf), 0) > 0) {
      }
      return;
    case Reply::Kind::kEndless: {
      const std::string chunk(1 << 16, 'x');
      SendAll(fd, "HTTP/1.0 200 OK\r\n\r\n");
      while (SendAll(fd, chunk)) {
      }
      return;
    }
  }
}

}  // namespace nodegate::http::testing
