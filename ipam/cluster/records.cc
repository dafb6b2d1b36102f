#include "ipam/cluster/records.h"

#include <sys/random.h>

#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

#include "lib/cni/skel.h"

namespace nodegate::ipam::cluster {
namespace {

using StoredJson = nlohmann::ordered_json;

// Longest free text kept (pod names, timestamps): far above what Kubernetes allows.
constexpr size_t kMaxText = 1024;

Error Corrupt(std::string_view key, const std::string& why) {
  return Error(kErrStoreCorrupt, std::string(key) + ": not a value cluster-ipam writes: " + why,
               "inspect it with: etcdctl get " + std::string(key));
}

// A reader of one decoded object that words every mismatch with the key and the member.
class Reader {
 public:
  Reader(std::string_view key, const StoredJson& object) : key_(key), object_(object) {}

  Result<std::string> Text(const char* name, bool required = true) const {
    const auto it = object_.find(name);
    if (it == object_.end()) {
      if (!required) return std::string();
      return Corrupt(key_, std::string("no \"") + name + "\"");
    }
    if (!it->is_string()) return Corrupt(key_, std::string("\"") + name + "\" is not a string");
    const auto& text = it->get_ref<const std::string&>();
    if (text.size() > kMaxText) return Corrupt(key_, std::string("\"") + name + "\" is too long");
    for (unsigned char c : text) {
      if (c < 0x20 || c == 0x7f) {
        return Corrupt(key_, std::string("\"") + name + "\" holds a control character");
      }
    }
    return text;
  }

  Result<uint64_t> Number(const char* name, uint64_t max) const {
    const auto it = object_.find(name);
    if (it == object_.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max) {
      return Corrupt(key_,
                     std::string("\"") + name + "\" is not a number up to " + std::to_string(max));
    }
    return it->get<uint64_t>();
  }

  Result<net::IpAddress> Address(const char* name) const {
    NG_ASSIGN_OR_RETURN(std::string text, Text(name));
    auto ip = net::IpAddress::Parse(text);
    if (!ip || ip->ToString() != text) {
      return Corrupt(key_, std::string("\"") + name + "\" is not an address in canonical form");
    }
    return *ip;
  }

  Result<net::IpPrefix> Network(const char* name) const {
    NG_ASSIGN_OR_RETURN(std::string text, Text(name));
    auto prefix = net::IpPrefix::Parse(text);
    if (!prefix || prefix->Network() != prefix->address() || prefix->ToString() != text) {
      return Corrupt(key_, std::string("\"") + name + "\" is not a network in canonical form");
    }
    return *prefix;
  }

  Result<std::string> Node(const char* name, bool required = true) const {
    NG_ASSIGN_OR_RETURN(std::string node, Text(name, required));
    if ((required || !node.empty()) && !ValidNodeName(node)) {
      return Corrupt(key_, std::string("\"") + name + "\" is not a node name");
    }
    return node;
  }

  Status Format() const {
    NG_ASSIGN_OR_RETURN(uint64_t format, Number("format", 1000));
    if (format != kFormat) {
      return Corrupt(key_, "format " + std::to_string(format) + " (this cluster-ipam reads " +
                               std::to_string(kFormat) + ": written by a newer version?)");
    }
    return OkStatus();
  }

 private:
  std::string_view key_;
  const StoredJson& object_;
};

Result<StoredJson> ParseObject(std::string_view key, std::string_view value) {
  StoredJson j = StoredJson::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(key, "not JSON");
  if (!j.is_object()) return Corrupt(key, "not a JSON object");
  return j;
}

Result<const StoredJson*> Member(std::string_view key, const StoredJson& object, const char* name,
                                 bool (StoredJson::*kind)() const noexcept, const char* described) {
  const auto it = object.find(name);
  if (it == object.end() || !((*it).*kind)()) {
    return Corrupt(key, std::string("\"") + name + "\" is not " + described);
  }
  return &*it;
}

bool HexId(std::string_view id) {
  if (id.size() != 16) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status CheckHandleName(std::string_view key, std::string_view handle) {
  const size_t slash = handle.find('/');
  if (slash == std::string_view::npos ||
      !cni::ValidateContainerId(std::string(handle.substr(0, slash))).ok() ||
      !cni::ValidateInterfaceName(std::string(handle.substr(slash + 1))).ok()) {
    return Corrupt(key,
                   "\"" + std::string(handle.substr(0, 80)) + "\" is not <container id>/<ifname>");
  }
  return OkStatus();
}

int MinBlockSize(net::Family family) {
  return family == net::Family::kV4 ? kMinBlockSizeV4 : kMinBlockSizeV6;
}

}  // namespace

bool ValidNodeName(std::string_view name) {
  if (name.empty() || name.size() > 253 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string NewAllocationId() {
  uint64_t value = 0;
  while (::getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) {
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = kHex[value & 0xf];
    value >>= 4;
  }
  return out;
}

std::string NowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string EncodePool(const Pool& pool, std::string_view created) {
  StoredJson sets = StoredJson::array();
  for (const auto& set : pool.sets) {
    StoredJson ranges = StoredJson::array();
    for (size_t r = 0; r < set.range_set.ranges.size(); ++r) {
      const Range& range = set.range_set.ranges[r];
      ranges.push_back({{"subnet", range.subnet.ToString()},
                        {"rangeStart", range.range_start.ToString()},
                        {"rangeEnd", range.range_end.ToString()},
                        {"gateway", range.gateway.ToString()},
                        {"blockSize", set.block_sizes[r]}});
    }
    sets.push_back(std::move(ranges));
  }
  return StoredJson{{"format", kFormat}, {"created", std::string(created)}, {"rangeSets", sets}}
      .dump();
}

std::string EncodeClaim(const Claim& claim) {
  return StoredJson{{"format", kFormat},
                    {"block", claim.block.ToString()},
                    {"node", claim.node},
                    {"claimed", claim.claimed}}
      .dump();
}

std::string EncodeBlock(const Block& block) {
  StoredJson allocations = StoredJson::object();
  for (const auto& [ordinal, a] : block.allocations) {
    StoredJson entry = {{"handle", a.handle}, {"aid", a.aid}};
    if (!a.node.empty()) entry["node"] = a.node;
    allocations[std::to_string(ordinal)] = std::move(entry);
  }
  return StoredJson{{"format", kFormat},
                    {"block", block.block.ToString()},
                    {"node", block.node},
                    {"next", block.next},
                    {"allocations", std::move(allocations)}}
      .dump();
}

std::string EncodeHandle(const Handle& handle) {
  StoredJson addresses = StoredJson::array();
  for (const auto& a : handle.addresses) {
    addresses.push_back(
        {{"ip", a.ip.ToString()}, {"block", a.block.ToString()}, {"blockNode", a.block_node}});
  }
  StoredJson j = {{"format", kFormat},
                  {"network", handle.network},
                  {"containerID", handle.container_id},
                  {"ifname", handle.ifname},
                  {"node", handle.node},
                  {"aid", handle.aid},
                  {"addresses", std::move(addresses)}};
  if (!handle.pod.empty()) {
    StoredJson pod = StoredJson::object();
    if (!handle.pod.namespace_name.empty()) pod["namespace"] = handle.pod.namespace_name;
    if (!handle.pod.name.empty()) pod["name"] = handle.pod.name;
    if (!handle.pod.uid.empty()) pod["uid"] = handle.pod.uid;
    if (!handle.pod.infra_container_id.empty()) {
      pod["infraContainerID"] = handle.pod.infra_container_id;
    }
    j["pod"] = std::move(pod);
  }
  j["created"] = handle.created;
  return j.dump();
}

Result<Pool> DecodePool(std::string_view key, std::string_view value) {
  NG_ASSIGN_OR_RETURN(StoredJson j, ParseObject(key, value));
  const Reader top(key, j);
  NG_RETURN_IF_ERROR(top.Format());
  NG_ASSIGN_OR_RETURN(const StoredJson* sets,
                      Member(key, j, "rangeSets", &StoredJson::is_array, "a list"));
  if (sets->empty() || sets->size() > 64) return Corrupt(key, "\"rangeSets\" holds 1 to 64 sets");
  Pool pool;
  for (const StoredJson& set_json : *sets) {
    if (!set_json.is_array() || set_json.empty() || set_json.size() > 64) {
      return Corrupt(key, "a range set is not a list of 1 to 64 ranges");
    }
    std::vector<RangeSpec> specs;
    std::vector<int> sizes;
    for (const StoredJson& range_json : set_json) {
      if (!range_json.is_object()) return Corrupt(key, "a range is not an object");
      const Reader r(key, range_json);
      RangeSpec spec;
      NG_ASSIGN_OR_RETURN(spec.subnet, r.Network("subnet"));
      NG_ASSIGN_OR_RETURN(spec.range_start, r.Address("rangeStart"));
      NG_ASSIGN_OR_RETURN(spec.range_end, r.Address("rangeEnd"));
      NG_ASSIGN_OR_RETURN(spec.gateway, r.Address("gateway"));
      NG_ASSIGN_OR_RETURN(uint64_t size, r.Number("blockSize", 128));
      const int bits = spec.subnet->address().bit_length();
      if (static_cast<int>(size) > bits || static_cast<int>(size) < spec.subnet->length() ||
          static_cast<int>(size) < MinBlockSize(spec.subnet->family())) {
        return Corrupt(key,
                       "blockSize " + std::to_string(size) + " for " + spec.subnet->ToString());
      }
      specs.push_back(spec);
      sizes.push_back(static_cast<int>(size));
    }
    auto canonical = CanonicalizeRangeSet(specs);
    if (!canonical.ok()) return Corrupt(key, canonical.error().msg);
    // Stored ranges are already canonical: defaults applied, nothing left to fill in.
    for (size_t i = 0; i < specs.size(); ++i) {
      const Range& c = canonical->ranges[i];
      if (c.range_start != *specs[i].range_start || c.range_end != *specs[i].range_end ||
          c.gateway != *specs[i].gateway) {
        return Corrupt(key, "a range is not canonical");
      }
    }
    pool.sets.push_back(PoolSet{std::move(canonical).value(), std::move(sizes)});
  }
  return pool;
}

Result<Claim> DecodeClaim(std::string_view key, std::string_view value) {
  NG_ASSIGN_OR_RETURN(StoredJson j, ParseObject(key, value));
  const Reader r(key, j);
  NG_RETURN_IF_ERROR(r.Format());
  Claim claim;
  NG_ASSIGN_OR_RETURN(claim.block, r.Network("block"));
  NG_ASSIGN_OR_RETURN(claim.node, r.Node("node"));
  NG_ASSIGN_OR_RETURN(claim.claimed, r.Text("claimed", /*required=*/false));
  return claim;
}

Result<Block> DecodeBlock(std::string_view key, std::string_view value) {
  NG_ASSIGN_OR_RETURN(StoredJson j, ParseObject(key, value));
  const Reader r(key, j);
  NG_RETURN_IF_ERROR(r.Format());
  Block block;
  NG_ASSIGN_OR_RETURN(block.block, r.Network("block"));
  if (block.block.length() < MinBlockSize(block.block.family())) {
    return Corrupt(key, "a block larger than cluster-ipam makes");
  }
  const uint64_t capacity = BlockCapacity(block.block);
  NG_ASSIGN_OR_RETURN(block.node, r.Node("node"));
  NG_ASSIGN_OR_RETURN(block.next, r.Number("next", capacity - 1));
  NG_ASSIGN_OR_RETURN(const StoredJson* allocations,
                      Member(key, j, "allocations", &StoredJson::is_object, "an object"));
  for (const auto& [ordinal_text, entry] : allocations->items()) {
    uint64_t ordinal = 0;
    const auto [end, ec] =
        std::from_chars(ordinal_text.data(), ordinal_text.data() + ordinal_text.size(), ordinal);
    if (ec != std::errc() || end != ordinal_text.data() + ordinal_text.size() ||
        ordinal >= capacity || std::to_string(ordinal) != ordinal_text) {
      return Corrupt(
          key, "allocation \"" + ordinal_text.substr(0, 40) + "\" is not an ordinal of the block");
    }
    if (!entry.is_object()) return Corrupt(key, "an allocation is not an object");
    const Reader e(key, entry);
    Allocation a;
    NG_ASSIGN_OR_RETURN(a.handle, e.Text("handle"));
    NG_RETURN_IF_ERROR(CheckHandleName(key, a.handle));
    NG_ASSIGN_OR_RETURN(a.aid, e.Text("aid"));
    if (!HexId(a.aid)) return Corrupt(key, "an allocation id is not 16 hex digits");
    NG_ASSIGN_OR_RETURN(a.node, e.Node("node", /*required=*/false));
    block.allocations.emplace(ordinal, std::move(a));
  }
  return block;
}

Result<Handle> DecodeHandle(std::string_view key, std::string_view value) {
  NG_ASSIGN_OR_RETURN(StoredJson j, ParseObject(key, value));
  const Reader r(key, j);
  NG_RETURN_IF_ERROR(r.Format());
  Handle h;
  NG_ASSIGN_OR_RETURN(h.network, r.Text("network"));
  NG_ASSIGN_OR_RETURN(h.container_id, r.Text("containerID"));
  NG_ASSIGN_OR_RETURN(h.ifname, r.Text("ifname"));
  if (!cni::ValidateNetworkName(h.network).ok()) return Corrupt(key, "bad network name");
  NG_RETURN_IF_ERROR(CheckHandleName(key, h.container_id + "/" + h.ifname));
  NG_ASSIGN_OR_RETURN(h.node, r.Node("node"));
  NG_ASSIGN_OR_RETURN(h.aid, r.Text("aid"));
  if (!HexId(h.aid)) return Corrupt(key, "the allocation id is not 16 hex digits");
  NG_ASSIGN_OR_RETURN(const StoredJson* addresses,
                      Member(key, j, "addresses", &StoredJson::is_array, "a list"));
  if (addresses->size() > 64) return Corrupt(key, "more than 64 addresses");
  for (const StoredJson& item : *addresses) {
    if (!item.is_object()) return Corrupt(key, "an address is not an object");
    const Reader a(key, item);
    HandleAddress address;
    NG_ASSIGN_OR_RETURN(address.ip, a.Address("ip"));
    NG_ASSIGN_OR_RETURN(address.block, a.Network("block"));
    NG_ASSIGN_OR_RETURN(address.block_node, a.Node("blockNode"));
    if (!address.block.Contains(address.ip) ||
        address.block.length() < MinBlockSize(address.block.family())) {
      return Corrupt(key, address.ip.ToString() + " is not in block " + address.block.ToString());
    }
    h.addresses.push_back(std::move(address));
  }
  if (const auto pod = j.find("pod"); pod != j.end()) {
    if (!pod->is_object()) return Corrupt(key, "\"pod\" is not an object");
    const Reader p(key, *pod);
    NG_ASSIGN_OR_RETURN(h.pod.namespace_name, p.Text("namespace", false));
    NG_ASSIGN_OR_RETURN(h.pod.name, p.Text("name", false));
    NG_ASSIGN_OR_RETURN(h.pod.uid, p.Text("uid", false));
    NG_ASSIGN_OR_RETURN(h.pod.infra_container_id, p.Text("infraContainerID", false));
  }
  NG_ASSIGN_OR_RETURN(h.created, r.Text("created", /*required=*/false));
  return h;
}

bool SamePool(const Pool& a, const Pool& b) {
  if (a.sets.size() != b.sets.size()) return false;
  for (size_t s = 0; s < a.sets.size(); ++s) {
    const auto& x = a.sets[s];
    const auto& y = b.sets[s];
    if (x.block_sizes != y.block_sizes || x.range_set.ranges.size() != y.range_set.ranges.size()) {
      return false;
    }
    for (size_t r = 0; r < x.range_set.ranges.size(); ++r) {
      const Range& p = x.range_set.ranges[r];
      const Range& q = y.range_set.ranges[r];
      if (p.subnet != q.subnet || p.range_start != q.range_start || p.range_end != q.range_end ||
          p.gateway != q.gateway) {
        return false;
      }
    }
  }
  return true;
}

std::string DescribePool(const Pool& pool) {
  std::string out;
  for (size_t s = 0; s < pool.sets.size(); ++s) {
    out += (s ? "; " : "") + std::string("range set ") + std::to_string(s) + ":";
    const auto& set = pool.sets[s];
    for (size_t r = 0; r < set.range_set.ranges.size(); ++r) {
      const Range& range = set.range_set.ranges[r];
      out += " " + range.subnet.ToString() + " (" + range.ToString() + ", gateway " +
             range.gateway.ToString() + ", blockSize " + std::to_string(set.block_sizes[r]) + ")";
    }
  }
  return out;
}

}  // namespace nodegate::ipam::cluster
