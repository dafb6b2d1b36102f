#pragma once
// Where reservations live. The allocator and the verbs only talk to this interface; the
// disk implementation (disk_store.h) keeps the reference's files, the tests use a fake.
//
// A reservation is a name (normally the canonical IP text) owned by an Owner. The reference's
// byte format of an owner is "<container id>\r\n<ifname>"; very old files hold the container
// id alone ("legacy" owners, ifname empty here).
//
// A Store is used by one verb of one process at a time: the disk store holds the network's
// lock from Open to destruction, so every call below is already serialised.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::ipam {

struct Owner {
  std::string container_id;
  std::string ifname;  // empty: a legacy id-only reservation

  bool legacy() const { return ifname.empty(); }
  auto operator<=>(const Owner&) const = default;
};

// "<id>\r\n<ifname>", or "<id>" for a legacy owner: the reservation file's exact content.
std::string EncodeOwner(const Owner& owner);

// Parses reservation content the way the reference compares it (whitespace trimmed).
// nullopt for content no valid ADD could have written (empty, or an id/ifname that CNI's
// validation rules reject): such a file can never be matched by DEL or CHECK.
std::optional<Owner> DecodeOwner(std::string_view content);

class Store {
 public:
  virtual ~Store() = default;

  // Addresses reserved by exactly this owner (a legacy owner matches id-only content).
  virtual Result<std::vector<net::IpAddress>> FindByOwner(const Owner& owner) = 0;

  // Reserves ip for owner atomically. false (no error) when ip is already reserved.
  // On success also records ip as the last reserved address of range set `range_set`.
  virtual Result<bool> Reserve(const Owner& owner, const net::IpAddress& ip, int range_set) = 0;

  // The last reserved address of a range set; nullopt when unknown or unreadable.
  virtual Result<std::optional<net::IpAddress>> LastReserved(int range_set) = 0;

  // Drops the reservation of ip if owner holds it (rollback of a failed ADD).
  virtual Status Release(const Owner& owner, const net::IpAddress& ip) = 0;

  // Drops every reservation of owner (any name, as the reference); returns how many.
  virtual Result<int> ReleaseByOwner(const Owner& owner) = 0;

  // Whether ip is reserved by anyone (a crash leftover that holds no owner is not).
  virtual Result<bool> IsReserved(const net::IpAddress& ip) = 0;

  // Every reservation whose name is an address: owner is nullopt for unreadable content.
  struct Entry {
    net::IpAddress ip;
    std::optional<Owner> owner;
  };
  virtual Result<std::vector<Entry>> List() = 0;

  // Removes a listed reservation unconditionally (GC).
  virtual Status Remove(const net::IpAddress& ip) = 0;
};

}  // namespace nodegate::ipam
