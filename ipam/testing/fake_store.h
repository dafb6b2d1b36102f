#pragma once
// An in-memory Store with the disk store's semantics (exclusive reserve, owner matching,
// last reserved address per range set), for fast tests of the allocator and the verbs.

#include <map>
#include <optional>
#include <vector>

#include "ipam/store.h"

namespace nodegate::ipam::testing {

class FakeStore : public Store {
 public:
  std::map<net::IpAddress, Owner> reservations;
  std::map<int, net::IpAddress> last_reserved;
  int reserve_calls = 0;

  Result<std::vector<net::IpAddress>> FindByOwner(const Owner& owner) override {
    std::vector<net::IpAddress> out;
    for (const auto& [ip, o] : reservations) {
      if (o == owner) out.push_back(ip);
    }
    return out;
  }
  Result<bool> Reserve(const Owner& owner, const net::IpAddress& ip, int range_set) override {
    ++reserve_calls;
    if (reservations.count(ip)) return false;
    reservations[ip] = owner;
    last_reserved[range_set] = ip;
    return true;
  }
  Result<std::optional<net::IpAddress>> LastReserved(int range_set) override {
    auto it = last_reserved.find(range_set);
    if (it == last_reserved.end()) return std::optional<net::IpAddress>();
    return std::optional<net::IpAddress>(it->second);
  }
  Status Release(const Owner& owner, const net::IpAddress& ip) override {
    auto it = reservations.find(ip);
    if (it != reservations.end() && it->second == owner) reservations.erase(it);
    return OkStatus();
  }
  Result<int> ReleaseByOwner(const Owner& owner) override {
    int n = 0;
    for (auto it = reservations.begin(); it != reservations.end();) {
      if (it->second == owner) {
        it = reservations.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    return n;
  }
  Result<bool> IsReserved(const net::IpAddress& ip) override { return reservations.count(ip) > 0; }
  Result<std::vector<Entry>> List() override {
    std::vector<Entry> out;
    for (const auto& [ip, o] : reservations) out.push_back({ip, o});
    return out;
  }
  Status Remove(const net::IpAddress& ip) override {
    reservations.erase(ip);
    return OkStatus();
  }
};

inline net::IpAddress Ip(const char* text) { return *net::IpAddress::Parse(text); }

}  // namespace nodegate::ipam::testing
