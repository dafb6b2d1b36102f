#include "lib/tc/testing/fake_kernel.h"

#include <algorithm>

namespace nodegate::tc::testing {
namespace {

Error Refused(const std::string& what, const std::string& why) {
  return Error(kErrKernel, what + ": " + why);
}

std::string Dev(int ifindex) { return "dev " + std::to_string(ifindex); }

}  // namespace

netlink::LinkInfo FakeKernel::AddDevice(const std::string& name, const std::string& kind,
                                        uint32_t mtu) {
  Device device;
  device.link = {.index = next_index_++, .name = name, .kind = kind, .mtu = mtu, .up = true};
  devices_[device.link.index] = device;
  return device.link;
}

void FakeKernel::FailOperation(const std::string& operation, int nth) {
  faults_.push_back({operation, nth});
}

Status FakeKernel::Enter(const std::string& operation, const std::string& what) {
  ++calls_[operation];
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->operation != operation || --it->remaining > 0) continue;
    faults_.erase(it);
    return Refused(what, "injected fault");
  }
  return OkStatus();
}

Result<FakeKernel::Device*> FakeKernel::Find(int ifindex, const std::string& what) {
  auto it = devices_.find(ifindex);
  if (it == devices_.end()) return Refused(what, "No such device");
  return &it->second;
}

void FakeKernel::DropChildren(Device& device, const Qdisc& qdisc) {
  if (qdisc.parent == kIngressParent) {
    std::erase_if(device.filters, [](const Filter& f) { return f.parent == kIngressHandle; });
    return;
  }
  if (qdisc.parent != kRootParent) return;  // a leaf: HTB's leaves here have no children
  std::erase_if(device.filters, [](const Filter& f) { return f.parent != kIngressHandle; });
  device.classes.clear();
  std::erase_if(device.qdiscs, [](const auto& entry) {
    return entry.first != kRootParent && entry.first != kIngressParent;
  });
}

Result<std::optional<Qdisc>> FakeKernel::GetQdisc(int ifindex, uint32_t parent) {
  const std::string what = "get qdisc " + HandleString(parent) + " of " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kGetQdisc, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  auto it = device->qdiscs.find(parent);
  if (it == device->qdiscs.end()) return std::optional<Qdisc>();
  return std::optional<Qdisc>(it->second);
}

Status FakeKernel::AddQdisc(int ifindex, const Qdisc& qdisc, bool replace) {
  const std::string what = "add qdisc " + Describe(qdisc) + " on " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kAddQdisc, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  const bool hook = qdisc.kind == "ingress" || qdisc.kind == "clsact";
  if (hook != (qdisc.parent == kIngressParent)) return Refused(what, "Invalid argument");
  if (qdisc.parent != kRootParent && qdisc.parent != kIngressParent &&
      std::none_of(device->classes.begin(), device->classes.end(),
                   [&](const HtbClass& c) { return c.classid == qdisc.parent; })) {
    return Refused(what, "No such file or directory");
  }
  for (const auto& [parent, other] : device->qdiscs) {
    if (parent != qdisc.parent && qdisc.handle != 0 && other.handle == qdisc.handle) {
      return Refused(what, "File exists");
    }
  }
  auto it = device->qdiscs.find(qdisc.parent);
  if (it != device->qdiscs.end()) {
    if (!replace) return Refused(what, "File exists");
    // Same kind and handle: changed in place, children kept; otherwise grafted anew.
    if (it->second.kind != qdisc.kind || it->second.handle != qdisc.handle) {
      DropChildren(*device, it->second);
    }
  }
  device->qdiscs[qdisc.parent] = qdisc;
  return OkStatus();
}

Status FakeKernel::DeleteQdisc(int ifindex, const Qdisc& qdisc) {
  const std::string what =
      "delete qdisc " + qdisc.kind + " " + HandleString(qdisc.handle) + " on " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kDeleteQdisc, what));
  auto device = devices_.find(ifindex);
  if (device == devices_.end()) return OkStatus();  // gone with its device
  auto it = device->second.qdiscs.find(qdisc.parent);
  // Nothing there, or another qdisc than the one named: the kernel answers ENOENT/EINVAL,
  // which the real DeleteQdisc reads as "already gone".
  if (it == device->second.qdiscs.end() ||
      (qdisc.handle != 0 && it->second.handle != qdisc.handle)) {
    return OkStatus();
  }
  DropChildren(device->second, it->second);
  device->second.qdiscs.erase(it);
  return OkStatus();
}

Result<std::vector<HtbClass>> FakeKernel::ListHtbClasses(int ifindex) {
  const std::string what = "list classes of " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kListClasses, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  return device->classes;
}

Status FakeKernel::AddHtbClass(int ifindex, const HtbClass& cls) {
  const std::string what = "add " + Describe(cls) + " on " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kAddClass, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  auto root = device->qdiscs.find(kRootParent);
  if (root == device->qdiscs.end() || root->second.kind != "htb" ||
      root->second.handle != cls.parent) {
    return Refused(what, "Invalid argument");
  }
  for (const HtbClass& c : device->classes) {
    if (c.classid == cls.classid) return Refused(what, "File exists");
  }
  device->classes.push_back(cls);
  return OkStatus();
}

Result<std::vector<Filter>> FakeKernel::ListFilters(int ifindex, uint32_t parent) {
  const std::string what = "list filters " + HandleString(parent) + " of " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kListFilters, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  std::vector<Filter> out;
  for (const Filter& f : device->filters) {
    if (f.parent == parent) out.push_back(f);
  }
  return out;
}

Status FakeKernel::AddFilter(int ifindex, const Filter& filter) {
  const std::string what = "add filter " + Describe(filter) + " on " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kAddFilter, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(ifindex, what));
  const bool has_qdisc =
      std::any_of(device->qdiscs.begin(), device->qdiscs.end(),
                  [&](const auto& q) { return q.second.handle == filter.parent; });
  if (!has_qdisc) return Refused(what, "Invalid argument");
  for (const Action& a : filter.actions) {
    if (a.kind == ActionKind::kMirredEgressRedirect && devices_.count(a.ifindex) == 0) {
      return Refused(what, "No such device");
    }
  }
  Filter added = filter;
  added.handle = MakeHandle(0x800, device->next_filter++);
  device->filters.push_back(std::move(added));
  return OkStatus();
}

Status FakeKernel::DeleteFilters(int ifindex, uint32_t parent, uint16_t pref, uint16_t protocol) {
  const std::string what = "delete filters pref " + std::to_string(pref) + " of " +
                           HandleString(parent) + " on " + Dev(ifindex);
  NG_RETURN_IF_ERROR(Enter(kDeleteFilters, what));
  auto device = devices_.find(ifindex);
  if (device == devices_.end()) return OkStatus();
  std::erase_if(device->second.filters, [&](const Filter& f) {
    return f.parent == parent && f.pref == pref && f.protocol == protocol;
  });
  return OkStatus();
}

Result<std::optional<netlink::LinkInfo>> FakeKernel::CreateIfb(
    const netlink::IfbSpec& spec,
    const std::function<Status(const netlink::LinkInfo&)>& while_down) {
  NG_RETURN_IF_ERROR(Enter(kCreateIfb, "create ifb " + spec.name));
  if (Link(spec.name)) return std::optional<netlink::LinkInfo>();
  Device device;
  device.link = {.index = next_index_++,
                 .name = spec.name,
                 .kind = "ifb",
                 .mtu = spec.mtu != 0 ? spec.mtu : 1500,
                 .txqlen = spec.txqlen};
  const int index = device.link.index;
  devices_[index] = device;
  // As netlink::CreateIfb: whatever fails once the device exists deletes it again.
  if (while_down) {
    if (Status s = while_down(devices_[index].link); !s.ok()) {
      devices_.erase(index);
      return s.error();
    }
  }
  if (Status s = UpdateLink(devices_[index].link, spec); !s.ok()) {
    devices_.erase(index);
    return s.error();
  }
  return std::optional<netlink::LinkInfo>(devices_[index].link);
}

Result<std::optional<netlink::LinkInfo>> FakeKernel::GetLinkByName(const std::string& name) {
  NG_RETURN_IF_ERROR(Enter(kGetLink, "get link " + name));
  return Link(name);
}

Status FakeKernel::UpdateLink(const netlink::LinkInfo& current, const netlink::IfbSpec& spec) {
  const std::string what = "update link " + current.name;
  NG_RETURN_IF_ERROR(Enter(kUpdateLink, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(current.index, what));
  if (spec.mtu != 0) device->link.mtu = spec.mtu;
  device->link.up = true;
  device->link.alias = spec.alias;
  return OkStatus();
}

Status FakeKernel::DeleteLink(const std::string& name) {
  NG_RETURN_IF_ERROR(Enter(kDeleteLink, "delete link " + name));
  std::erase_if(devices_, [&](const auto& d) { return d.second.link.name == name; });
  return OkStatus();
}

Status FakeKernel::DeleteLinkByIndex(int index) {
  NG_RETURN_IF_ERROR(Enter(kDeleteLink, "delete link " + std::to_string(index)));
  devices_.erase(index);
  return OkStatus();
}

Status FakeKernel::RetireLink(const netlink::LinkInfo& link, const std::string& new_name) {
  const std::string what = "retire link " + link.name + " as " + new_name;
  NG_RETURN_IF_ERROR(Enter(kRetireLink, what));
  NG_ASSIGN_OR_RETURN(Device * device, Find(link.index, what));
  if (Link(new_name)) return Refused(what, "File exists");
  device->link.up = false;
  device->link.name = new_name;
  return OkStatus();
}

std::optional<netlink::LinkInfo> FakeKernel::Link(const std::string& name) const {
  for (const auto& [index, device] : devices_) {
    if (device.link.name == name) return device.link;
  }
  return std::nullopt;
}

int FakeKernel::calls(const std::string& operation) const {
  auto it = calls_.find(operation);
  return it == calls_.end() ? 0 : it->second;
}

std::string FakeKernel::Dump() const {
  std::string out;
  for (const auto& [index, device] : devices_) {
    const netlink::LinkInfo& l = device.link;
    out += "dev " + l.name + " kind " + l.kind + " mtu " + std::to_string(l.mtu) +
           (l.up ? " up" : " down") + (l.alias.empty() ? "" : " alias \"" + l.alias + "\"") + "\n";
    // Root first, then leaves by parent, then the ingress hook (kIngressParent sorts last).
    for (const auto& [parent, qdisc] : device.qdiscs) {
      if (parent == kRootParent) out += "  qdisc " + Describe(qdisc) + "\n";
    }
    for (const auto& [parent, qdisc] : device.qdiscs) {
      if (parent != kRootParent) out += "  qdisc " + Describe(qdisc) + "\n";
    }
    for (const HtbClass& c : device.classes) out += "  class " + Describe(c) + "\n";
    for (const Filter& f : device.filters) out += "  filter " + Describe(f) + "\n";
  }
  return out;
}

}  // namespace nodegate::tc::testing
