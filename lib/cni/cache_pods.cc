#include "lib/cni/cache_pods.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <nlohmann/json.hpp>

#include "lib/sys/dir_io.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::cni {
namespace {

constexpr size_t kMaxCacheFileBytes = 16 << 20;

// One cache file into `out` (reused between files), in four system calls where a path-based
// read takes six: a node has one file per container. False for anything but a regular file
// (the folder listing's type skips the rest unopened, fstat decides; O_NONBLOCK: a FIFO must
// not wait for a writer; O_NOFOLLOW: no symlinks) or one over the cap.
bool ReadCacheFile(int folder, const sys::DirEntry& entry, std::string& out) {
  if (entry.type != DT_REG && entry.type != DT_UNKNOWN) return false;
  sys::UniqueFd fd(::openat(folder, entry.name.c_str(),
                            O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return false;
  // fstat after the open decides: the file may have been replaced since the listing.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // A read of a regular file that returns less than asked for has reached its end, so a file
  // shorter than the first read (they all are) costs no second read to find the end. Read into
  // a buffer that is never cleared: resizing `out` to 64 KiB would zero it for every file.
  constexpr size_t kFirstRead = 64 << 10;
  static thread_local const std::unique_ptr<char[]> first =
      std::make_unique_for_overwrite<char[]>(kFirstRead);
  ssize_t n;
  do {
    n = ::read(fd.get(), first.get(), kFirstRead);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  out.assign(first.get(), static_cast<size_t>(n));
  if (static_cast<size_t>(n) < kFirstRead) return true;
  return sys::ReadAllCapped(fd.get(), kMaxCacheFileBytes - kFirstRead, out);
}

// The members of a cache entry that name its container and pod, read from the parser's events: an
// entry also holds the network's whole config and result, and a node has one entry per container,
// so nothing else is kept (no document is built). A member given twice counts as its last value, as
// in a parsed document.
class CacheEntryReader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool top_is_object = false;
  std::optional<std::string> container_id;  // when the last "containerId" is a string
  std::optional<std::string> network;       // when the last "networkName" is a string
  // When the last "cniArgs" is an array: its [string, string] elements, in order.
  std::optional<std::vector<std::pair<std::string, std::string>>> args;

  bool null() override { return Scalar(nullptr); }
  bool boolean(bool /*value*/) override { return Scalar(nullptr); }
  bool number_integer(number_integer_t /*value*/) override { return Scalar(nullptr); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return Scalar(nullptr); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return Scalar(nullptr);
  }
  bool string(string_t& value) override { return Scalar(&value); }
  bool binary(binary_t& /*value*/) override { return Scalar(nullptr); }
  bool key(string_t& name) override {
    if (depth_ == 1) {
      member_ = name == "containerId"   ? kId
                : name == "networkName" ? kNetwork
                : name == "cniArgs"     ? kArgs
                                        : kOther;
    }
    return true;
  }
  bool start_object(std::size_t /*elements*/) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t /*elements*/) override { return Open(true); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  enum Member { kOther, kId, kNetwork, kArgs };

  bool InArgs() const { return depth_ >= 2 && member_ == kArgs && args.has_value(); }
  bool Scalar(const std::string* text) {
    if (depth_ == 1 && member_ == kId) {
      container_id = text ? std::optional<std::string>(*text) : std::nullopt;
    } else if (depth_ == 1 && member_ == kNetwork) {
      network = text ? std::optional<std::string>(*text) : std::nullopt;
    } else if (depth_ == 1 && member_ == kArgs) {
      args.reset();  // not an array
    } else if (depth_ == 3 && InArgs()) {
      pair_ok_ = pair_ok_ && text != nullptr && pair_.size() < 2;
      if (pair_ok_) pair_.push_back(*text);
    }
    return true;
  }
  bool Open(bool array) {
    if (depth_ == 0) top_is_object = !array;
    if (depth_ == 1 && member_ == kId) container_id.reset();
    if (depth_ == 1 && member_ == kNetwork) network.reset();
    if (depth_ == 1 && member_ == kArgs) {
      args.reset();
      if (array) args.emplace();
    }
    if (depth_ == 2 && InArgs()) {  // an element of cniArgs: a pair only if an array
      pair_.clear();
      pair_ok_ = array;
    } else if (depth_ == 3 && InArgs()) {
      pair_ok_ = false;  // a pair holds no containers
    }
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    if (depth_ == 2 && InArgs() && pair_ok_ && pair_.size() == 2) {
      args->emplace_back(std::move(pair_[0]), std::move(pair_[1]));
    }
    return true;
  }

  int depth_ = 0;
  Member member_ = kOther;
  std::vector<std::string> pair_;
  bool pair_ok_ = false;
};

// The value of `name` in the [[K, V], ...] list.
std::optional<std::string> CniArg(const std::vector<std::pair<std::string, std::string>>& args,
                                  std::string_view name) {
  for (const auto& [key, value] : args) {
    if (key == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CachedPod> PodOfCacheEntry(std::string_view bytes) {
  CacheEntryReader entry;
  if (!nlohmann::json::sax_parse(bytes.begin(), bytes.end(), &entry) || !entry.top_is_object ||
      !entry.container_id || entry.container_id->empty() || !entry.args) {
    return std::nullopt;
  }
  const auto ns = CniArg(*entry.args, "K8S_POD_NAMESPACE");
  const auto name = CniArg(*entry.args, "K8S_POD_NAME");
  if (!ns || !name || ns->empty() || name->empty()) {
    return std::nullopt;
  }
  return CachedPod{std::move(*entry.container_id), entry.network.value_or(""), *ns + "/" + *name};
}

namespace {

// CacheFolder: the results folder of `dir`, which may be the cache's root (what
// `nodegate cni --cache-dir` and libcni's CacheDir name) or results/ itself.
sys::UniqueFd CacheFolder(const std::string& dir) {
  const std::string nested = dir + "/results";
  sys::UniqueFd folder(::open(nested.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!folder.valid()) folder.Reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return folder;
}

}  // namespace

std::optional<std::string> PodOfContainer(const std::string& dir, const std::string& network,
                                          const std::string& container_id) {
  sys::UniqueFd folder = CacheFolder(dir);
  if (!folder.valid() || container_id.empty()) return std::nullopt;
  const auto entries = sys::ListDir(folder.get(), dir);
  if (!entries.ok()) return std::nullopt;
  const std::string prefix = network + "-" + container_id + "-";
  std::string bytes;
  for (const sys::DirEntry& entry : *entries) {
    const bool candidate = network.empty()
                               ? entry.name.find("-" + container_id + "-") != std::string::npos
                               : entry.name.rfind(prefix, 0) == 0;
    if (!candidate || !ReadCacheFile(folder.get(), entry, bytes)) continue;
    auto pod = PodOfCacheEntry(bytes);
    if (pod && pod->container_id == container_id &&
        (network.empty() || pod->network.empty() || pod->network == network)) {
      return std::move(pod->pod);
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> PodsByContainerId(const std::string& dir, std::stop_token stop,
                                                     const std::set<std::string>* only_ids) {
  std::map<std::string, std::string> pods;
  sys::UniqueFd folder = CacheFolder(dir);
  if (!folder.valid()) return pods;
  const auto entries = sys::ListDir(folder.get(), dir);
  if (!entries.ok()) return pods;
  std::string bytes;
  for (const sys::DirEntry& entry : *entries) {
    if (stop.stop_requested()) break;
    if (only_ids != nullptr &&
        std::none_of(only_ids->begin(), only_ids->end(), [&](const std::string& id) {
          return !id.empty() && entry.name.find(id) != std::string::npos;
        })) {
      continue;
    }
    if (!ReadCacheFile(folder.get(), entry, bytes)) continue;
    if (auto pod = PodOfCacheEntry(bytes)) {
      pods.emplace(std::move(pod->container_id), std::move(pod->pod));
    }
  }
  return pods;
}

}  // namespace nodegate::cni
