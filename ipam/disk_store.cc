#include "ipam/disk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "lib/sys/atomic_file.h"
#include "lib/sys/dir_io.h"

namespace nodegate::ipam {
namespace {

constexpr char kLockName[] = "lock";
constexpr char kLastReservedPrefix[] = "last_reserved_ip.";
constexpr char kIndexDir[] = ".nodegate";
constexpr char kOwnersDir[] = "owners";
constexpr char kMetaName[] = "meta";
// Version 2: 16 buckets (version 1 had 256; its index is not trusted, so it is rebuilt).
constexpr char kMetaHeader[] = "nodegate-ipam-index 2";
constexpr char kOwnerHeader[] = "nodegate-ipam-owners 2";
constexpr int kFileMode = 0600;  // reservation files (the reference uses 0600 since v1.4.0)

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Every file of the store is small (a reservation is two short lines, an index bucket about
// N/16 lines); a bigger one is foreign or corrupt, and is an error rather than memory used up.
constexpr size_t kStoreFileCap = 16 << 20;

// A file of the store, or nullopt when it does not exist.
Result<std::optional<std::string>> ReadAt(int dir_fd, const std::string& name,
                                          const std::string& dir) {
  return sys::ReadFileAt(dir_fd, name, dir, kStoreFileCap);
}

// Used only where a torn file is harmless: buckets and meta are written while meta is invalid
// (so a torn file is never trusted), and last_reserved_ip.N only steers where round robin
// starts.
Status WriteInPlaceAt(int dir_fd, const std::string& name, std::string_view content,
                      const std::string& dir) {
  return sys::WriteInPlaceAt(dir_fd, name, content, dir, kFileMode);
}

// The owner index is split into 16 bucket files ("b0" to "bf") by a hash of the key: a lookup
// reads one file of about N/16 entries (some 300 lines at 5,000 reservations). Few files,
// because the first rebuild after a switch from the reference creates all of them, and on
// ext4 a file created soon after many were removed costs up to a millisecond (the allocator
// passes over recently freed inodes): with 256 that first call took 200 ms, where the
// reference takes 65 (bench/ipam/bench.sh).
std::string BucketOf(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : key) {
    h = (h ^ c) * 0x100000001b3ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  const unsigned b = static_cast<unsigned>(h ^ (h >> 32)) & 0xfu;
  return std::string("b") + kHex[b];
}

using OwnerMap = std::map<std::string, std::vector<std::string>>;

// A key's lines of a bucket, "<key>\t<name>" per reservation, names sorted.
void AppendOwnerLines(const std::string& key, const std::vector<std::string>& names,
                      std::string& out) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& n : sorted) {
    out += key + "\t" + n + "\n";
  }
}

// Header line, then the owner lines of each key in sorted order.
std::string EncodeBucket(const OwnerMap& owners, const std::string& bucket) {
  std::string out = std::string(kOwnerHeader) + "\n";
  for (const auto& [key, names] : owners) {
    if (names.empty() || BucketOf(key) != bucket) {
      continue;
    }
    AppendOwnerLines(key, names, out);
  }
  return out;
}

// Every non-empty bucket's EncodeBucket text, in one pass over the owners (a rebuild at 5,000
// reservations spent most of its time encoding each of 256 buckets from the whole map).
std::map<std::string, std::string> EncodeAllBuckets(const OwnerMap& owners) {
  std::map<std::string, std::string> out;
  for (const auto& [key, names] : owners) {
    if (names.empty()) {
      continue;
    }
    std::string& text = out[BucketOf(key)];
    if (text.empty()) {
      text = std::string(kOwnerHeader) + "\n";
    }
    AppendOwnerLines(key, names, text);
  }
  return out;
}

// meta's content: the index is trusted only while both still hold.
std::string MetaText(const std::string& boot_id, const struct stat& dir_stat) {
  return std::string(kMetaHeader) + "\nboot " + boot_id + "\nmtime " +
         std::to_string(dir_stat.st_mtim.tv_sec) + " " + std::to_string(dir_stat.st_mtim.tv_nsec) +
         "\n";
}

std::optional<OwnerMap> DecodeBucket(const std::string& text, const std::string& bucket) {
  const std::string header = std::string(kOwnerHeader) + "\n";
  if (text.compare(0, header.size(), header) != 0) {
    return std::nullopt;
  }
  OwnerMap out;
  size_t start = header.size();
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      return std::nullopt;  // every line ends with '\n'; anything else is torn
    }
    const std::string line = text.substr(start, nl - start);
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || BucketOf(line.substr(0, tab)) != bucket) {
      return std::nullopt;
    }
    out[line.substr(0, tab)].push_back(line.substr(tab + 1));
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::string OwnerKey(const Owner& owner) { return owner.container_id + ":" + owner.ifname; }

Result<std::unique_ptr<DiskStore>> DiskStore::Open(const std::string& data_dir,
                                                   const std::string& network) {
  std::unique_ptr<DiskStore> store(new DiskStore(data_dir + "/" + network));
  NG_RETURN_IF_ERROR(store->OpenAndLock());
  if (!store->IndexIsValid()) {
    NG_RETURN_IF_ERROR(store->Rebuild());
    NG_RETURN_IF_ERROR(store->Commit());
  }
  return store;
}

DiskStore::~DiskStore() = default;  // closing lock_fd_ releases the flock

Status DiskStore::OpenAndLock() {
  NG_RETURN_IF_ERROR(sys::MkdirAll(dir_, 0755));
  dir_fd_.Reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_.valid()) {
    return sys::IoError("open", dir_);
  }
  // Same file, mode and lock kind as the reference, so both can share a directory.
  lock_fd_.Reset(::openat(dir_fd_.get(), kLockName, O_CREAT | O_RDONLY | O_CLOEXEC, 0750));
  if (!lock_fd_.valid()) {
    return sys::IoError("open", dir_ + "/" + kLockName);
  }
  while (::flock(lock_fd_.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return sys::IoError("flock", dir_ + "/" + kLockName);
    }
  }
  boot_id_ = sys::ReadBootId();
  return OkStatus();
}

bool DiskStore::IndexIsValid() {
  index_fd_.Reset(::openat(dir_fd_.get(), kIndexDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!index_fd_.valid()) {
    return false;
  }
  owners_fd_.Reset(::openat(index_fd_.get(), kOwnersDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!owners_fd_.valid()) {
    return false;
  }
  auto meta = ReadAt(index_fd_.get(), kMetaName, dir_);
  if (!meta.ok() || !meta->has_value()) {
    return false;
  }
  struct stat st;
  if (::fstat(dir_fd_.get(), &st) != 0) {
    return false;
  }
  return **meta == MetaText(boot_id_, st);
}

Status DiskStore::BeginMutation() {
  if (mutating_) {
    return OkStatus();
  }
  // Spoil meta's header in place (cheaper than unlink + create): from here until the next
  // marker is written, a crash leaves an index nobody trusts.
  if (index_fd_.valid()) {
    sys::UniqueFd fd(::openat(index_fd_.get(), kMetaName, O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.valid()) {
      if (::pwrite(fd.get(), "x", 1, 0) != 1) {
        return sys::IoError("write", dir_ + "/" + kIndexDir + "/" + kMetaName);
      }
    } else if (errno != ENOENT) {
      return sys::IoError("open", dir_ + "/" + kIndexDir + "/" + kMetaName);
    }
  }
  mutating_ = true;
  return OkStatus();
}

Status DiskStore::EnsureIndexDirs() {
  if (!index_fd_.valid()) {
    if (::mkdirat(dir_fd_.get(), kIndexDir, 0700) != 0 && errno != EEXIST) {
      return sys::IoError("mkdir", dir_ + "/" + kIndexDir);
    }
    index_fd_.Reset(::openat(dir_fd_.get(), kIndexDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!index_fd_.valid()) {
      return sys::IoError("open", dir_ + "/" + kIndexDir);
    }
  }
  if (!owners_fd_.valid()) {
    if (::mkdirat(index_fd_.get(), kOwnersDir, 0700) != 0 && errno != EEXIST) {
      return sys::IoError("mkdir", dir_ + "/" + kIndexDir + "/" + kOwnersDir);
    }
    owners_fd_.Reset(::openat(index_fd_.get(), kOwnersDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!owners_fd_.valid()) {
      return sys::IoError("open", dir_ + "/" + kIndexDir + "/" + kOwnersDir);
    }
  }
  return OkStatus();
}

Result<std::vector<DiskStore::ScannedFile>> DiskStore::Scan() {
  NG_ASSIGN_OR_RETURN(auto entries, sys::ListDir(dir_fd_.get(), dir_));
  std::vector<ScannedFile> files;
  std::set<std::string> names;
  for (const auto& [name, type] : entries) {
    names.insert(name);
    if (name == kLockName || name == kIndexDir || StartsWith(name, kLastReservedPrefix)) {
      continue;
    }
    if (StartsWith(name, sys::kTempPrefix)) {
      // Our own temporary file from a killed call: only ever created under the lock we hold.
      NG_RETURN_IF_ERROR(BeginMutation());
      ::unlinkat(dir_fd_.get(), name.c_str(), 0);
      names.erase(name);
      continue;
    }
    if (type == DT_DIR) {
      continue;
    }
    if (type != DT_REG) {
      struct stat st;
      if (::fstatat(dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !S_ISREG(st.st_mode)) {
        continue;
      }
    }
    auto content = ReadAt(dir_fd_.get(), name, dir_);
    if (!content.ok() || !content->has_value()) {
      continue;  // vanished or unreadable: the reference skips it too
    }
    ++stats_.files_scanned;
    ScannedFile f;
    f.name = name;
    if (auto ip = net::IpAddress::Parse(name); ip && ip->ToString() == name) {
      f.ip = *ip;
    }
    f.owner = DecodeOwner(**content);
    if (f.ip && (*content)->find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
      // An empty reservation is a writer killed between create and write (the reference
      // writes after O_EXCL; we never do). Writers hold the lock, so it is dead: drop it.
      NG_RETURN_IF_ERROR(BeginMutation());
      ::unlinkat(dir_fd_.get(), name.c_str(), 0);
      names.erase(name);
      continue;
    }
    if (name.find('\n') != std::string::npos) {
      continue;  // cannot be listed in a line-based owner file; never created by a plugin
    }
    files.push_back(std::move(f));
  }
  // What the scan just learnt spares the allocation a create per taken address (a first call
  // after the reference, without its cursor, would otherwise try every reservation in turn).
  dir_names_ = std::move(names);
  return files;
}

Status DiskStore::SyncIndex(const std::map<std::string, std::vector<std::string>>& owners) {
  NG_RETURN_IF_ERROR(BeginMutation());
  NG_RETURN_IF_ERROR(EnsureIndexDirs());
  const std::string owners_path = dir_ + "/" + kIndexDir + "/" + kOwnersDir;
  const std::map<std::string, std::string> wanted = EncodeAllBuckets(owners);
  NG_ASSIGN_OR_RETURN(auto existing, sys::ListDir(owners_fd_.get(), owners_path));
  std::set<std::string> up_to_date;
  for (const auto& [file, type] : existing) {
    (void)type;
    auto it = wanted.find(file);
    if (it == wanted.end()) {
      ::unlinkat(owners_fd_.get(), file.c_str(), 0);
      continue;
    }
    auto content = ReadAt(owners_fd_.get(), file, owners_path);
    if (content.ok() && content->has_value() && **content == it->second) {
      up_to_date.insert(file);
    }
  }
  for (const auto& [bucket, text] : wanted) {
    if (!up_to_date.count(bucket)) {
      NG_RETURN_IF_ERROR(WriteInPlaceAt(owners_fd_.get(), bucket, text, owners_path));
    }
  }
  return OkStatus();
}

Status DiskStore::Rebuild() {
  NG_RETURN_IF_ERROR(BeginMutation());
  ++stats_.rebuilds;
  NG_ASSIGN_OR_RETURN(std::vector<ScannedFile> files, Scan());
  std::map<std::string, std::vector<std::string>> owners;
  for (const auto& f : files) {
    if (f.owner) {
      owners[OwnerKey(*f.owner)].push_back(f.name);
    }
  }
  NG_RETURN_IF_ERROR(SyncIndex(owners));
  owners_ = std::move(owners);
  full_ = true;
  dirty_.clear();
  resync_ = false;
  return OkStatus();
}

Status DiskStore::WriteBucket(const std::string& bucket) {
  NG_RETURN_IF_ERROR(EnsureIndexDirs());
  const std::string path = dir_ + "/" + kIndexDir + "/" + kOwnersDir;
  // An emptied bucket stays as a header-only file: rewriting is cheaper than unlink + create.
  return WriteInPlaceAt(owners_fd_.get(), bucket, EncodeBucket(owners_, bucket), path);
}

Result<std::vector<std::string>*> DiskStore::Names(const std::string& key) {
  const std::string bucket = BucketOf(key);
  if (!full_ && !loaded_buckets_.count(bucket) && owners_fd_.valid()) {
    const std::string path = dir_ + "/" + kIndexDir + "/" + kOwnersDir;
    NG_ASSIGN_OR_RETURN(auto content, ReadAt(owners_fd_.get(), bucket, path));
    std::optional<OwnerMap> decoded = OwnerMap();
    if (content) {
      decoded = DecodeBucket(*content, bucket);
    }
    if (!decoded) {
      NG_RETURN_IF_ERROR(Rebuild());  // torn or foreign: distrust the whole index
    } else {
      for (auto& [k, names] : *decoded) {
        owners_.emplace(k, std::move(names));
      }
      loaded_buckets_.insert(bucket);
    }
  }
  return &owners_[key];
}

Result<std::vector<std::string>> DiskStore::VerifiedNames(const Owner& owner) {
  const std::string key = OwnerKey(owner);
  NG_ASSIGN_OR_RETURN(std::vector<std::string> * names, Names(key));
  if (full_) {
    return *names;  // just rebuilt from the files themselves
  }
  const std::string expected = EncodeOwner(owner);
  for (const auto& name : *names) {
    NG_ASSIGN_OR_RETURN(auto content, ReadAt(dir_fd_.get(), name, dir_));
    auto decoded = content ? DecodeOwner(*content) : std::nullopt;
    if (!decoded || *decoded != owner) {
      NG_RETURN_IF_ERROR(Rebuild());
      NG_ASSIGN_OR_RETURN(names, Names(key));
      return *names;
    }
  }
  return *names;
}

Result<std::vector<net::IpAddress>> DiskStore::FindByOwner(const Owner& owner) {
  NG_ASSIGN_OR_RETURN(std::vector<std::string> names, VerifiedNames(owner));
  std::vector<net::IpAddress> ips;
  for (const auto& name : names) {
    if (auto ip = net::IpAddress::Parse(name); ip && ip->ToString() == name) {
      ips.push_back(*ip);
    }
  }
  return ips;
}

Result<bool> DiskStore::LinkReservation(const Owner& owner, const std::string& name) {
  ++stats_.links_tried;
  const std::string content = EncodeOwner(owner);
  if (tmpfile_ok_) {
    // An unnamed file with the full content, then linked under its name: the reservation
    // appears complete or not at all, and a crash leaves nothing behind.
    sys::UniqueFd fd(::openat(dir_fd_.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, kFileMode));
    if (fd.valid()) {
      NG_RETURN_IF_ERROR(sys::WriteAllTo(fd.get(), content, dir_ + "/" + name));
      const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
      if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_.get(), name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        return true;
      }
      if (errno == EEXIST) {
        return false;
      }
    }
    tmpfile_ok_ = false;  // no O_TMPFILE support or no /proc: use a named temporary
  }
  const std::string tmp =
      std::string(sys::kTempPrefix) + name + "." + std::to_string(sys::RandomU64() % 1000000007);
  sys::UniqueFd fd(
      ::openat(dir_fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode));
  if (!fd.valid()) {
    return sys::IoError("create", dir_ + "/" + tmp);
  }
  Status written = sys::WriteAllTo(fd.get(), content, dir_ + "/" + tmp);
  fd.Reset();
  Result<bool> linked = written.ok() ? Result<bool>(true) : Result<bool>(written.error());
  if (written.ok() && ::linkat(dir_fd_.get(), tmp.c_str(), dir_fd_.get(), name.c_str(), 0) != 0) {
    linked = errno == EEXIST ? Result<bool>(false)
                             : Result<bool>(sys::IoError("link", dir_ + "/" + name));
  }
  ::unlinkat(dir_fd_.get(), tmp.c_str(), 0);
  return linked;
}

Result<bool> DiskStore::Reserve(const Owner& owner, const net::IpAddress& ip, int range_set) {
  const std::string name = ip.ToString();
  const std::string key = OwnerKey(owner);
  NG_ASSIGN_OR_RETURN(std::vector<std::string> * names, Names(key));
  if (dir_names_ && dir_names_->count(name)) {
    return false;  // listed under our lock: the reference's exclusive create would fail too
  }
  NG_RETURN_IF_ERROR(BeginMutation());
  NG_ASSIGN_OR_RETURN(bool reserved, LinkReservation(owner, name));
  if (!reserved) {
    // The walk has run into reservations (a cursor behind a run of them): one listing answers
    // the rest of it, where each failed create costs a file of its own.
    if (!dir_names_) {
      NG_RETURN_IF_ERROR(ListDirNames());
    }
    dir_names_->insert(name);
    return false;
  }
  names->push_back(name);
  dirty_.insert(key);
  if (dir_names_) {
    dir_names_->insert(name);
  }
  NG_RETURN_IF_ERROR(
      WriteInPlaceAt(dir_fd_.get(), kLastReservedPrefix + std::to_string(range_set), name, dir_));
  return true;
}

Result<std::optional<net::IpAddress>> DiskStore::LastReserved(int range_set) {
  auto content = ReadAt(dir_fd_.get(), kLastReservedPrefix + std::to_string(range_set), dir_);
  if (!content.ok() || !content->has_value()) {
    return std::optional<net::IpAddress>();  // the reference only logs a read error
  }
  std::string text = **content;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  return net::IpAddress::Parse(text);
}

Status DiskStore::Release(const Owner& owner, const net::IpAddress& ip) {
  const std::string name = ip.ToString();
  NG_ASSIGN_OR_RETURN(auto content, ReadAt(dir_fd_.get(), name, dir_));
  if (!content || DecodeOwner(*content) != std::optional<Owner>(owner)) {
    return OkStatus();  // not ours (any more)
  }
  NG_RETURN_IF_ERROR(BeginMutation());
  if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return sys::IoError("remove", dir_ + "/" + name);
  }
  const std::string key = OwnerKey(owner);
  NG_ASSIGN_OR_RETURN(std::vector<std::string> * names, Names(key));
  std::erase(*names, name);
  dirty_.insert(key);
  if (dir_names_) {
    dir_names_->erase(name);
  }
  return OkStatus();
}

Result<int> DiskStore::ReleaseByOwner(const Owner& owner) {
  NG_ASSIGN_OR_RETURN(std::vector<std::string> names, VerifiedNames(owner));
  if (names.empty()) {
    return 0;
  }
  NG_RETURN_IF_ERROR(BeginMutation());
  int released = 0;
  std::string errors;
  std::vector<std::string> kept;
  for (const auto& name : names) {
    if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      errors += (errors.empty() ? "" : "; ") + dir_ + "/" + name + ": " + std::strerror(errno);
      kept.push_back(name);
      continue;
    }
    ++released;
    if (dir_names_) {
      dir_names_->erase(name);
    }
  }
  const std::string key = OwnerKey(owner);
  NG_ASSIGN_OR_RETURN(std::vector<std::string> * cached, Names(key));
  *cached = kept;
  dirty_.insert(key);
  if (!errors.empty()) {
    return Error(kErrIo, "release: " + errors);
  }
  return released;
}

Status DiskStore::ListDirNames() {
  NG_ASSIGN_OR_RETURN(auto entries, sys::ListDir(dir_fd_.get(), dir_));
  dir_names_.emplace();
  for (const auto& [name, type] : entries) {
    (void)type;
    dir_names_->insert(name);
  }
  return OkStatus();
}

Result<bool> DiskStore::IsReserved(const net::IpAddress& ip) {
  if (!dir_names_) {
    // Names only, no file reads: under a valid index every address-named file has an owner
    // (empty leftovers are removed by the rebuild that a foreign write triggers).
    NG_RETURN_IF_ERROR(ListDirNames());
  }
  return dir_names_->count(ip.ToString()) > 0;
}

Result<std::vector<Store::Entry>> DiskStore::List() {
  NG_ASSIGN_OR_RETURN(std::vector<ScannedFile> files, Scan());
  std::vector<Entry> out;
  for (const auto& f : files) {
    if (f.ip) {
      out.push_back({*f.ip, f.owner});
    }
  }
  return out;
}

Status DiskStore::Remove(const net::IpAddress& ip) {
  NG_RETURN_IF_ERROR(BeginMutation());
  const std::string name = ip.ToString();
  if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return sys::IoError("remove", dir_ + "/" + name);
  }
  resync_ = true;
  dir_names_.reset();
  return OkStatus();
}

Status DiskStore::WriteMarker() {
  NG_RETURN_IF_ERROR(EnsureIndexDirs());
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  // One second in the past: whatever changes the directory later stamps "now", which can
  // never equal this value (even on filesystems that keep whole seconds only).
  const timespec times[2] = {
      {0, UTIME_OMIT},
      {now.tv_sec - 1, static_cast<long>(sys::RandomU64() % 1000000000ull)},
  };
  if (::futimens(dir_fd_.get(), times) != 0) {
    return sys::IoError("set mtime of", dir_);
  }
  struct stat st;
  if (::fstat(dir_fd_.get(), &st) != 0) {
    return sys::IoError("stat", dir_);
  }
  const std::string meta = MetaText(boot_id_, st);
  // meta's header is spoiled here (BeginMutation): a torn write is simply not trusted.
  return WriteInPlaceAt(index_fd_.get(), kMetaName, meta, dir_ + "/" + kIndexDir);
}

Status DiskStore::Commit() {
  if (resync_) {
    NG_RETURN_IF_ERROR(Rebuild());
  }
  if (!mutating_) {
    return OkStatus();
  }
  std::set<std::string> buckets;
  for (const auto& key : dirty_) {
    buckets.insert(BucketOf(key));
  }
  for (const auto& bucket : buckets) {
    NG_RETURN_IF_ERROR(WriteBucket(bucket));
  }
  dirty_.clear();
  NG_RETURN_IF_ERROR(WriteMarker());
  mutating_ = false;
  return OkStatus();
}

}  // namespace nodegate::ipam
