#include "plugins/bandwidth/shaper.h"

#include <algorithm>
#include <set>
#include <utility>

#include "lib/base/scope_guard.h"
#include "lib/sys/detached.h"
#include "lib/tc/kernel.h"

namespace nodegate::bandwidth {
namespace {

// A device's root qdisc, its HTB classes and their leaves, and the filters on the root.
// Empty qdiscs: the kernel's default root.
struct RootState {
  std::vector<tc::Qdisc> qdiscs;  // root first, then class leaves in class order
  std::vector<tc::HtbClass> classes;
  std::vector<tc::Filter> filters;
};

// Root qdiscs of the shapes the plugin (or the reference, v1.5's HTB included) creates.
bool IsPluginRoot(const tc::Qdisc& q) {
  return (q.kind == "tbf" || q.kind == "htb") && q.handle == tc::MakeHandle(1, 0);
}

// The host veth's ingress hook: the qdisc there (if any) and its filters, split into those at
// the plugin's prefs and the rest.
struct IngressState {
  std::optional<tc::Qdisc> qdisc;
  std::vector<tc::Filter> ours;
  std::vector<tc::Filter> others;
};

bool IsPluginPref(uint16_t pref) { return pref >= kPrefIpv4 && pref <= kPrefCatchAll; }

Result<RootState> ReadRoot(tc::Kernel& kernel, int ifindex) {
  RootState state;
  NG_ASSIGN_OR_RETURN(std::optional<tc::Qdisc> root, kernel.GetQdisc(ifindex, tc::kRootParent));
  if (!root || root->handle == 0) {
    return state;
  }
  state.qdiscs.push_back(*root);
  if (root->kind == "htb") {
    NG_ASSIGN_OR_RETURN(state.classes, kernel.ListHtbClasses(ifindex));
    for (const tc::HtbClass& c : state.classes) {
      NG_ASSIGN_OR_RETURN(std::optional<tc::Qdisc> leaf, kernel.GetQdisc(ifindex, c.classid));
      if (leaf && leaf->handle != 0) {
        state.qdiscs.push_back(*leaf);
      }
    }
    NG_ASSIGN_OR_RETURN(state.filters, kernel.ListFilters(ifindex, root->handle));
  }
  return state;
}

Result<IngressState> ReadIngress(tc::Kernel& kernel, int ifindex) {
  IngressState state;
  NG_ASSIGN_OR_RETURN(state.qdisc, kernel.GetQdisc(ifindex, tc::kIngressParent));
  if (!state.qdisc || state.qdisc->kind != "ingress") {
    return state;
  }
  NG_ASSIGN_OR_RETURN(std::vector<tc::Filter> filters,
                      kernel.ListFilters(ifindex, tc::kIngressHandle));
  for (tc::Filter& f : filters) {
    (IsPluginPref(f.pref) ? state.ours : state.others).push_back(std::move(f));
  }
  return state;
}

bool FilterLess(const tc::Filter& a, const tc::Filter& b) {
  return std::make_pair(a.pref, tc::Describe(a)) < std::make_pair(b.pref, tc::Describe(b));
}

bool SameFilters(std::vector<tc::Filter> want, std::vector<tc::Filter> have) {
  if (want.size() != have.size()) {
    return false;
  }
  std::sort(want.begin(), want.end(), FilterLess);
  std::sort(have.begin(), have.end(), FilterLess);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].SameRule(have[i])) {
      return false;
    }
  }
  return true;
}

bool SameQdiscs(const std::vector<tc::Qdisc>& want, const std::vector<tc::Qdisc>& have) {
  if (want.size() != have.size()) {
    return false;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!tc::SameKernelState(want[i], have[i])) {
      return false;
    }
  }
  return true;
}

// Every distinct (pref, protocol) of `filters`: the unit the kernel deletes filters in.
std::set<std::pair<uint16_t, uint16_t>> FilterGroups(const std::vector<tc::Filter>& filters) {
  std::set<std::pair<uint16_t, uint16_t>> groups;
  for (const tc::Filter& f : filters) {
    groups.insert({f.pref, f.protocol});
  }
  return groups;
}

// Brings a device's root to `want` (qdiscs parent-first, filters on the root).
Status ApplyRoot(tc::Kernel& kernel, int ifindex, const RootState& want, const RootState& have) {
  if (SameQdiscs(want.qdiscs, have.qdiscs) && want.classes == have.classes &&
      SameFilters(want.filters, have.filters)) {
    return OkStatus();
  }
  // A lone TBF changes in place (no moment without shaping).
  if (want.qdiscs.size() == 1 && have.qdiscs.size() == 1 && want.filters.empty() &&
      have.filters.empty() && want.qdiscs[0].kind == "tbf" && have.qdiscs[0].kind == "tbf" &&
      want.qdiscs[0].handle == have.qdiscs[0].handle) {
    return kernel.AddQdisc(ifindex, want.qdiscs[0], /*replace=*/true);
  }
  if (!have.qdiscs.empty()) {
    NG_RETURN_IF_ERROR(kernel.DeleteQdisc(ifindex, have.qdiscs[0]));
  }
  if (!want.qdiscs.empty()) {
    NG_RETURN_IF_ERROR(kernel.AddQdisc(ifindex, want.qdiscs[0], /*replace=*/false));
  }
  for (const tc::HtbClass& c : want.classes) {
    NG_RETURN_IF_ERROR(kernel.AddHtbClass(ifindex, c));
  }
  for (size_t i = 1; i < want.qdiscs.size(); ++i) {
    NG_RETURN_IF_ERROR(kernel.AddQdisc(ifindex, want.qdiscs[i], /*replace=*/false));
  }
  for (const tc::Filter& f : want.filters) {
    NG_RETURN_IF_ERROR(kernel.AddFilter(ifindex, f));
  }
  return OkStatus();
}

// Brings the plugin's filters on the host veth's ingress hook to `want`.
Status ApplyIngress(tc::Kernel& kernel, int ifindex, const std::string& dev,
                    const std::vector<tc::Filter>& want, const IngressState& have) {
  if (have.qdisc && have.qdisc->kind != "ingress") {
    return Error(kErrKernel, "host veth " + dev + " has a " + have.qdisc->kind +
                                 " qdisc on its ingress hook; the bandwidth plugin needs the "
                                 "ingress qdisc there and does not share it");
  }
  if (want.empty() && !have.qdisc) {
    return OkStatus();
  }
  if (!want.empty() && have.qdisc && SameFilters(want, have.ours)) {
    return OkStatus();
  }
  for (const auto& [pref, protocol] : FilterGroups(have.ours)) {
    NG_RETURN_IF_ERROR(kernel.DeleteFilters(ifindex, tc::kIngressHandle, pref, protocol));
  }
  if (want.empty()) {
    if (have.others.empty()) {
      NG_RETURN_IF_ERROR(kernel.DeleteQdisc(ifindex, *have.qdisc));
    }
    return OkStatus();
  }
  if (!have.qdisc) {
    tc::Qdisc ingress;
    ingress.kind = "ingress";
    ingress.handle = tc::kIngressHandle;
    ingress.parent = tc::kIngressParent;
    NG_RETURN_IF_ERROR(kernel.AddQdisc(ifindex, ingress, /*replace=*/false));
  }
  for (const tc::Filter& f : want) {
    NG_RETURN_IF_ERROR(kernel.AddFilter(ifindex, f));
  }
  return OkStatus();
}

// Puts back an ingress hook as read before a failed ADD (best effort).
void RestoreIngress(tc::Kernel& kernel, int ifindex, const IngressState& before) {
  auto now = ReadIngress(kernel, ifindex);
  if (!now.ok()) {
    return;
  }
  if (!before.qdisc) {
    if (now->qdisc && now->qdisc->kind == "ingress" && now->others.empty()) {
      (void)kernel.DeleteQdisc(ifindex, *now->qdisc);
    }
    return;
  }
  (void)ApplyIngress(kernel, ifindex, "", before.ours, *now);
}

void RestoreRoot(tc::Kernel& kernel, int ifindex, const RootState& before) {
  auto now = ReadRoot(kernel, ifindex);
  if (!now.ok()) {
    return;
  }
  if (before.qdiscs.empty()) {
    if (!now->qdiscs.empty()) {
      (void)kernel.DeleteQdisc(ifindex, now->qdiscs[0]);
    }
    return;
  }
  (void)ApplyRoot(kernel, ifindex, before, *now);
}

// The reference installs the redirect twice (stolen, then an unreachable pass): for CHECK,
// treat that pair as the single redirect we install.
tc::Filter WithoutReferenceDuplicate(tc::Filter f) {
  if (f.actions.size() == 2 && f.actions[0].kind == tc::ActionKind::kMirredEgressRedirect &&
      f.actions[1].kind == tc::ActionKind::kMirredEgressRedirect &&
      f.actions[0].verdict == tc::kActStolen && f.actions[1].ifindex == f.actions[0].ifindex) {
    f.actions.resize(1);
  }
  return f;
}

Error CheckFailed(const std::string& msg) { return Error(kErrCheckFailed, msg); }

Status CheckQdiscs(const std::vector<tc::Qdisc>& want, const std::vector<tc::Qdisc>& have,
                   const std::string& dev) {
  for (size_t i = 0; i < want.size(); ++i) {
    const tc::Qdisc& w = want[i];
    const std::string where = " on " + dev + " (" + w.kind + " " + tc::HandleString(w.handle) + ")";
    if (i >= have.size()) {
      return CheckFailed("Failed to find qdisc" + where);
    }
    const tc::Qdisc& h = have[i];
    if (w.kind != h.kind || w.handle != h.handle || w.parent != h.parent) {
      return CheckFailed("qdisc differs" + where + ": have " + tc::Describe(h) + ", want " +
                         tc::Describe(w));
    }
    if (w.kind == "tbf") {
      if (w.tbf.rate_bytes != h.tbf.rate_bytes) {
        return CheckFailed("Rate doesn't match" + where + ": have " +
                           std::to_string(h.tbf.rate_bytes) + " B/s, want " +
                           std::to_string(w.tbf.rate_bytes) + " B/s");
      }
      if (w.tbf.limit_bytes != h.tbf.limit_bytes) {
        return CheckFailed("Limit doesn't match" + where + ": have " +
                           std::to_string(h.tbf.limit_bytes) + " B, want " +
                           std::to_string(w.tbf.limit_bytes) + " B");
      }
      if (w.tbf.buffer_ticks != h.tbf.buffer_ticks) {
        return CheckFailed("Buffer doesn't match" + where + ": have " +
                           std::to_string(h.tbf.buffer_ticks) + " ticks, want " +
                           std::to_string(w.tbf.buffer_ticks) + " ticks");
      }
    } else if (!tc::SameKernelState(w, h)) {
      return CheckFailed("qdisc parameters differ" + where + ": have " + tc::Describe(h) +
                         ", want " + tc::Describe(w));
    }
  }
  if (have.size() > want.size()) {
    return CheckFailed("unexpected qdisc on " + dev + ": " + tc::Describe(have[want.size()]));
  }
  return OkStatus();
}

Status CheckClasses(const std::vector<tc::HtbClass>& want, const std::vector<tc::HtbClass>& have,
                    const std::string& dev) {
  for (const tc::HtbClass& w : want) {
    auto it = std::find_if(have.begin(), have.end(),
                           [&](const tc::HtbClass& h) { return h.classid == w.classid; });
    if (it == have.end()) {
      return CheckFailed("Failed to find class " + tc::HandleString(w.classid) + " on " + dev);
    }
    if (!(*it == w)) {
      return CheckFailed("class differs on " + dev + ": have " + tc::Describe(*it) + ", want " +
                         tc::Describe(w));
    }
  }
  if (have.size() > want.size()) {
    return CheckFailed("unexpected classes on " + dev + " (" + std::to_string(have.size()) +
                       ", want " + std::to_string(want.size()) + ")");
  }
  return OkStatus();
}

Status CheckFilters(const std::vector<tc::Filter>& want, std::vector<tc::Filter> have,
                    const std::string& where) {
  for (tc::Filter& f : have) {
    f = WithoutReferenceDuplicate(std::move(f));
  }
  for (const tc::Filter& w : want) {
    auto it =
        std::find_if(have.begin(), have.end(), [&](const tc::Filter& h) { return h.SameRule(w); });
    if (it == have.end()) {
      std::string seen;
      for (const tc::Filter& h : have) {
        seen += (seen.empty() ? "" : "; ") + tc::Describe(h);
      }
      return CheckFailed("Failed to find filter on " + where + ": want " + tc::Describe(w) +
                         (seen.empty() ? ", have none" : ", have " + seen));
    }
    have.erase(it);
  }
  if (!have.empty()) {
    return CheckFailed("unexpected filter on " + where + ": " + tc::Describe(have.front()));
  }
  return OkStatus();
}

}  // namespace

Result<std::optional<netlink::LinkInfo>> ApplyPlan(tc::Kernel& kernel, const ShapingPlan& plan,
                                                   const netlink::LinkInfo& veth) {
  // What was there before, to put back if a later step fails.
  NG_ASSIGN_OR_RETURN(RootState veth_root_before, ReadRoot(kernel, veth.index));
  NG_ASSIGN_OR_RETURN(IngressState ingress_before, ReadIngress(kernel, veth.index));
  bool failed = true;

  std::optional<netlink::LinkInfo> ifb;
  bool created_ifb = false;
  RootState ifb_root_before;
  ScopeGuard undo_ifb([&] {
    if (!failed || !plan.ifb) {
      return;
    }
    if (created_ifb) {
      (void)RemoveIfb(kernel, plan.ifb->name);
    } else if (ifb) {
      RestoreRoot(kernel, ifb->index, ifb_root_before);
    }
  });

  if (plan.ifb) {
    const netlink::IfbSpec spec{
        .name = plan.ifb->name, .mtu = veth.mtu, .txqlen = 0, .alias = plan.ifb->alias};
    const RootState want_ifb_root{{plan.ifb->root}, {}, {}};
    // A first ADD creates the ifb, so that comes first; what holds the name is looked at only
    // when it is taken (a repeated ADD, or someone else's device). A new ifb gets its root
    // while still down (no RCU wait, netlink::CreateIfb); before, its root was the kernel's
    // default, which ReadRoot reports as nothing.
    NG_ASSIGN_OR_RETURN(ifb, kernel.CreateIfb(spec, [&](const netlink::LinkInfo& down) {
      return ApplyRoot(kernel, down.index, want_ifb_root, RootState{});
    }));
    created_ifb = ifb.has_value();
    if (!created_ifb) {
      NG_ASSIGN_OR_RETURN(ifb, kernel.GetLinkByName(plan.ifb->name));
      if (!ifb) {
        return Error(kErrKernel, "ifb " + plan.ifb->name + " vanished while being taken over");
      }
      if (ifb->kind != "ifb") {
        return Error(kErrKernel, "device " + plan.ifb->name + " exists and is a " +
                                     (ifb->kind.empty() ? "device without kind" : ifb->kind) +
                                     ", not an ifb");
      }
      NG_RETURN_IF_ERROR(kernel.UpdateLink(*ifb, spec));
      NG_ASSIGN_OR_RETURN(ifb_root_before, ReadRoot(kernel, ifb->index));
      NG_RETURN_IF_ERROR(ApplyRoot(kernel, ifb->index, want_ifb_root, ifb_root_before));
    }
  }

  ScopeGuard undo_ingress([&] {
    if (failed) {
      RestoreIngress(kernel, veth.index, ingress_before);
    }
  });
  const std::vector<tc::Filter> ingress_filters =
      ResolveRedirects(plan.host_ingress_filters, ifb ? ifb->index : 0);
  NG_RETURN_IF_ERROR(ApplyIngress(kernel, veth.index, veth.name, ingress_filters, ingress_before));

  ScopeGuard undo_root([&] {
    if (failed) {
      RestoreRoot(kernel, veth.index, veth_root_before);
    }
  });
  const RootState want_root{plan.host_root, plan.host_root_classes, plan.host_root_filters};
  if (!plan.host_root.empty()) {
    NG_RETURN_IF_ERROR(ApplyRoot(kernel, veth.index, want_root, veth_root_before));
  } else if (!veth_root_before.qdiscs.empty()) {
    // Ingress shaping turned off by a repeated ADD: drop our old root, leave others alone.
    if (IsPluginRoot(veth_root_before.qdiscs[0])) {
      NG_RETURN_IF_ERROR(kernel.DeleteQdisc(veth.index, veth_root_before.qdiscs[0]));
    }
  }

  failed = false;
  return ifb;
}

Status CheckPlan(tc::Kernel& kernel, const ShapingPlan& plan, const netlink::LinkInfo& veth) {
  if (!plan.host_root.empty()) {
    NG_ASSIGN_OR_RETURN(RootState root, ReadRoot(kernel, veth.index));
    NG_RETURN_IF_ERROR(CheckQdiscs(plan.host_root, root.qdiscs, veth.name));
    NG_RETURN_IF_ERROR(CheckClasses(plan.host_root_classes, root.classes, veth.name));
    if (!plan.host_root_filters.empty() || !root.filters.empty()) {
      NG_RETURN_IF_ERROR(
          CheckFilters(plan.host_root_filters, root.filters, veth.name + " root qdisc"));
    }
  }
  if (plan.ifb) {
    const std::string& name = plan.ifb->name;
    NG_ASSIGN_OR_RETURN(std::optional<netlink::LinkInfo> ifb, kernel.GetLinkByName(name));
    if (!ifb) {
      return CheckFailed("get ifb device: Link not found (" + name + ")");
    }
    if (ifb->kind != "ifb") {
      return CheckFailed("device " + name + " is not an ifb (kind \"" + ifb->kind + "\")");
    }
    if (!ifb->up) {
      return CheckFailed("ifb " + name + " is down");
    }
    if (ifb->mtu != veth.mtu) {
      return CheckFailed("ifb " + name + " has mtu " + std::to_string(ifb->mtu) + ", want " +
                         std::to_string(veth.mtu) + " (the host veth's)");
    }
    // An ifb without alias was made by the reference plugin: accepted.
    if (!ifb->alias.empty() && ifb->alias != plan.ifb->alias) {
      return CheckFailed("ifb " + name + " belongs to another attachment (alias \"" + ifb->alias +
                         "\", want \"" + plan.ifb->alias + "\")");
    }
    NG_ASSIGN_OR_RETURN(RootState ifb_root, ReadRoot(kernel, ifb->index));
    NG_RETURN_IF_ERROR(CheckQdiscs({plan.ifb->root}, ifb_root.qdiscs, name));

    NG_ASSIGN_OR_RETURN(IngressState ingress, ReadIngress(kernel, veth.index));
    if (!ingress.qdisc || ingress.qdisc->kind != "ingress") {
      return CheckFailed("Failed to find ingress qdisc on " + veth.name);
    }
    NG_RETURN_IF_ERROR(CheckFilters(ResolveRedirects(plan.host_ingress_filters, ifb->index),
                                    ingress.ours, veth.name + " ingress"));
  }
  return OkStatus();
}

Status RemoveHostObjects(tc::Kernel& kernel, int veth_index) {
  NG_ASSIGN_OR_RETURN(RootState root, ReadRoot(kernel, veth_index));
  if (!root.qdiscs.empty()) {
    if (IsPluginRoot(root.qdiscs[0])) {
      NG_RETURN_IF_ERROR(kernel.DeleteQdisc(veth_index, root.qdiscs[0]));
    }
  }
  NG_ASSIGN_OR_RETURN(IngressState ingress, ReadIngress(kernel, veth_index));
  if (ingress.qdisc && ingress.qdisc->kind == "ingress") {
    return ApplyIngress(kernel, veth_index, "", {}, ingress);
  }
  return OkStatus();
}

Status RemoveIfb(tc::Kernel& kernel, const std::string& name) { return kernel.DeleteLink(name); }

Status RetireIfb(tc::Kernel& kernel, const std::string& name) {
  // A DEL killed after retiring this container's ifb and before its helper started left it
  // under the retired name: delete it now (also frees that name for this retirement).
  const std::string retired = RetiredIfbName(name);
  NG_ASSIGN_OR_RETURN(std::optional<netlink::LinkInfo> left, kernel.GetLinkByName(retired));
  if (left && left->kind == "ifb") NG_RETURN_IF_ERROR(kernel.DeleteLinkByIndex(left->index));
  if (!sys::DetachedWorkAllowed()) return RemoveIfb(kernel, name);
  NG_ASSIGN_OR_RETURN(std::optional<netlink::LinkInfo> ifb, kernel.GetLinkByName(name));
  if (!ifb) return OkStatus();
  if (ifb->kind != "ifb") return RemoveIfb(kernel, name);
  NG_RETURN_IF_ERROR(kernel.RetireLink(*ifb, retired));
  const int index = ifb->index;
  const bool detached = sys::SpawnDetached([index] {
    if (auto helper = netlink::Socket::Open(); helper.ok()) {
      (void)netlink::DeleteLinkByIndex(*helper, index);  // GC deletes it if this fails
    }
  });
  return detached ? OkStatus() : kernel.DeleteLinkByIndex(index);
}

}  // namespace nodegate::bandwidth
