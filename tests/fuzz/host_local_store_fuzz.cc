// host-local's on-disk state (ipam/disk_store.h) as another writer may have left it: the input
// describes files (fuzz_support.h) written into a fresh network folder: reservations,
// last_reserved_ip.N, the lock, our .nodegate index and meta, or anything else. Opening the
// store and every read must not crash, whatever the files hold, and the owner index must
// agree with the reservation files: each listed reservation is found by its owner.

#include <algorithm>
#include <string>

#include "ipam/disk_store.h"
#include "ipam/store.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

constexpr char kNetwork[] = "fuzznet";

bool Contains(const std::vector<net::IpAddress>& ips, const net::IpAddress& ip) {
  return std::find(ips.begin(), ips.end(), ip) != ips.end();
}

// Every reservation List reports with an owner is one FindByOwner returns for that owner.
void CheckIndexAgrees(ipam::DiskStore& store) {
  const auto entries = store.List();
  if (!entries.ok()) {
    CheckErrorPrints(entries.error());
    return;
  }
  for (const auto& entry : *entries) {
    if (!entry.owner) {
      continue;
    }
    const auto found = store.FindByOwner(*entry.owner);
    NG_FUZZ_CHECK(found.ok() && Contains(*found, entry.ip));
  }
}

void ReadEverything(ipam::DiskStore& store, const std::vector<InputFile>& files) {
  CheckIndexAgrees(store);
  // Owners named by the files' contents, plus one that owns nothing.
  (void)store.FindByOwner({"nobody", "eth0"});
  for (const auto& file : files) {
    if (const auto owner = ipam::DecodeOwner(file.content)) {
      (void)store.FindByOwner(*owner);
    }
  }
  for (int range_set = 0; range_set < 3; ++range_set) {
    (void)store.LastReserved(range_set);
  }
  (void)store.IsReserved(*net::IpAddress::Parse("10.1.0.5"));
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(host_local_store) {
  const TempDir data_dir;
  const std::vector<InputFile> files = SplitFiles(data);
  WriteFiles(data_dir.path() + "/" + kNetwork, files);
  auto store = ipam::DiskStore::Open(data_dir.path(), kNetwork);
  if (!store.ok()) {
    CheckErrorPrints(store.error());
    return;
  }
  ReadEverything(**store, files);
  const auto rebuilt = (*store)->Rebuild();
  if (!rebuilt.ok()) {
    CheckErrorPrints(rebuilt.error());
    return;
  }
  CheckIndexAgrees(**store);
  const auto committed = (*store)->Commit();
  if (!committed.ok()) {
    CheckErrorPrints(committed.error());
  }
}
