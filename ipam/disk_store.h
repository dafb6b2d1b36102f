#pragma once
// The reference's on-disk state, plus an owner index so that no verb has to read every file.
//
// Truth (byte-compatible with the reference, which can share the directory):
//   <dataDir>/<network>/<ip>                 "<container id>\r\n<ifname>", created atomically
//                                            (O_TMPFILE + linkat, which fails if it exists)
//   <dataDir>/<network>/last_reserved_ip.<N>  the last reserved address of range set N
//   <dataDir>/<network>/lock                 flock(LOCK_EX) for the whole verb
//
// Cache (ours; rebuilt from the truth whenever it cannot be trusted):
//   <network>/.nodegate/owners/b<x>           16 buckets (FNV-1a of the key) of lines
//                                            "<id>:<ifname>\t<reserved name>" ("<id>:" for
//                                            legacy id-only files)
//   <network>/.nodegate/meta                  boot id + the network directory's mtime as we
//                                            last set it
//
// Validity: after its last change a verb sets the network directory's mtime to a marker value
// (one second in the past, random nanoseconds) and records it in meta. Any later change of
// the directory by anyone (the reference creating or removing a reservation, an operator's
// rm) stamps the current time instead, so the index is trusted only when the mtime still
// equals the marker and the boot id is unchanged. Before changing anything a verb spoils
// meta's header (one byte overwritten in place), so a crash at any point leaves an untrusted
// index that the next call rebuilds.
// Every owner entry is also checked against the reservation file before it is acted on; a
// mismatch rebuilds the index too.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ipam/store.h"
#include "lib/sys/fd.h"

namespace nodegate::ipam {

class DiskStore final : public Store {
 public:
  // What a call cost; for tests and the benchmark's commentary.
  struct Stats {
    int rebuilds = 0;
    int files_scanned = 0;
    int links_tried = 0;  // reservation files we tried to link into place (taken or not)
  };

  // Creates <data_dir>/<network> (0755, parents too) and its lock file (0750), takes the
  // lock, and validates the owner index (rebuilding it if needed). Errors: code 5.
  static Result<std::unique_ptr<DiskStore>> Open(const std::string& data_dir,
                                                 const std::string& network);
  ~DiskStore() override;

  Result<std::vector<net::IpAddress>> FindByOwner(const Owner& owner) override;
  Result<bool> Reserve(const Owner& owner, const net::IpAddress& ip, int range_set) override;
  Result<std::optional<net::IpAddress>> LastReserved(int range_set) override;
  Status Release(const Owner& owner, const net::IpAddress& ip) override;
  Result<int> ReleaseByOwner(const Owner& owner) override;
  Result<bool> IsReserved(const net::IpAddress& ip) override;
  Result<std::vector<Entry>> List() override;
  Status Remove(const net::IpAddress& ip) override;

  // Writes this call's owner-index changes and marks the index valid. Call once at the end
  // of a verb, also after a rolled-back ADD. Skipping it only costs a rebuild later.
  Status Commit();

  // Re-reads every reservation file and rewrites the index to match (removing our crash
  // leftovers and empty, half-written reservation files on the way).
  Status Rebuild();

  const Stats& stats() const { return stats_; }
  const std::string& dir() const { return dir_; }

 private:
  struct ScannedFile {
    std::string name;
    std::optional<net::IpAddress> ip;  // when the name is a canonical address
    std::optional<Owner> owner;
  };

  explicit DiskStore(std::string dir) : dir_(std::move(dir)) {}

  Status OpenAndLock();
  bool IndexIsValid();
  Status BeginMutation();
  Result<std::vector<ScannedFile>> Scan();
  Status SyncIndex(const std::map<std::string, std::vector<std::string>>& owners);
  Status EnsureIndexDirs();
  Result<std::vector<std::string>*> Names(const std::string& key);
  Result<std::vector<std::string>> VerifiedNames(const Owner& owner);
  Status WriteBucket(const std::string& bucket);
  Result<bool> LinkReservation(const Owner& owner, const std::string& name);
  Status WriteMarker();
  Status ListDirNames();

  std::string dir_;
  sys::UniqueFd dir_fd_;
  sys::UniqueFd lock_fd_;
  sys::UniqueFd index_fd_;   // .nodegate
  sys::UniqueFd owners_fd_;  // .nodegate/owners
  std::string boot_id_;
  bool mutating_ = false;   // meta spoiled, changes pending
  bool resync_ = false;     // reservation files changed behind the owner cache (GC)
  bool full_ = false;       // owners_ holds every key (after a rebuild)
  bool tmpfile_ok_ = true;  // O_TMPFILE + linkat usable here
  std::map<std::string, std::vector<std::string>> owners_;  // key -> names (loaded buckets)
  std::set<std::string> loaded_buckets_;
  std::set<std::string> dirty_;
  // The directory's entries as listed under our lock (by a scan, for STATUS, or after a
  // collision), then kept current by this call's own changes. Every writer holds the lock, so
  // a name in it is taken: Reserve skips it without a create that would fail.
  std::optional<std::set<std::string>> dir_names_;
  Stats stats_;
};

// The owner index key: "<id>:<ifname>" ("<id>:" for a legacy owner). ':' can appear in
// neither a container id nor an interface name.
std::string OwnerKey(const Owner& owner);

}  // namespace nodegate::ipam
