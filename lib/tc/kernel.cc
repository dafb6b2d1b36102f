#include "lib/tc/kernel.h"

#include <arpa/inet.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_gact.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cerrno>
#include <cstring>

namespace nodegate::tc {
namespace {

using netlink::MsgPtr;
using netlink::NewMessage;

std::string Dev(int ifindex) { return "ifindex " + std::to_string(ifindex); }

Result<MsgPtr> TcMessage(int type, int flags, int ifindex, uint32_t parent, uint32_t handle,
                         uint32_t info) {
  MsgPtr msg = NewMessage(type, flags);
  if (!msg) {
    return Error(kErrKernel, "netlink: out of memory");
  }
  tcmsg tcm{};
  tcm.tcm_family = AF_UNSPEC;
  tcm.tcm_ifindex = ifindex;
  tcm.tcm_parent = parent;
  tcm.tcm_handle = handle;
  tcm.tcm_info = info;
  if (nlmsg_append(msg.get(), &tcm, sizeof(tcm), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, "netlink: message too large");
  }
  return msg;
}

Status PutQdiscOptions(nl_msg* msg, const Qdisc& q) {
  int r = nla_put_string(msg, TCA_KIND, q.kind.c_str());
  if (q.kind == "tbf") {
    tc_tbf_qopt opt{};
    // The 32-bit field carries the low bits; TCA_TBF_RATE64 the full rate (as the reference).
    opt.rate.rate = static_cast<uint32_t>(q.tbf.rate_bytes);
    opt.limit = q.tbf.limit_bytes;
    opt.buffer = q.tbf.buffer_ticks;
    nlattr* nest = nla_nest_start(msg, TCA_OPTIONS);
    r |= nest == nullptr ? -1 : 0;
    r |= nla_put(msg, TCA_TBF_PARMS, sizeof(opt), &opt);
    if (q.tbf.rate_bytes >= (uint64_t{1} << 32)) {
      r |= nla_put_u64(msg, TCA_TBF_RATE64, q.tbf.rate_bytes);
    }
    if (nest != nullptr) {
      nla_nest_end(msg, nest);
    }
  } else if (q.kind == "htb") {
    tc_htb_glob glob{};
    glob.version = TC_HTB_PROTOVER;
    glob.rate2quantum = 10;  // unused: every class gets an explicit quantum
    glob.defcls = q.htb_default;
    nlattr* nest = nla_nest_start(msg, TCA_OPTIONS);
    r |= nest == nullptr ? -1 : 0;
    r |= nla_put(msg, TCA_HTB_INIT, sizeof(glob), &glob);
    r |= nla_put_u32(msg, TCA_HTB_DIRECT_QLEN, q.htb_direct_qlen);
    if (nest != nullptr) {
      nla_nest_end(msg, nest);
    }
  } else if (q.kind == "pfifo" || q.kind == "bfifo") {
    tc_fifo_qopt opt{};
    opt.limit = q.fifo_limit;
    r |= nla_put(msg, TCA_OPTIONS, sizeof(opt), &opt);
  }
  if (r < 0) {
    return Error(kErrKernel, "netlink: cannot encode qdisc " + Describe(q));
  }
  return OkStatus();
}

// Parses one RTM_NEWQDISC message into a Qdisc (kind-specific options where we know them).
std::optional<std::pair<int, Qdisc>> ParseQdisc(const nlmsghdr* hdr) {
  if (hdr->nlmsg_type != RTM_NEWQDISC) {
    return std::nullopt;
  }
  auto* mutable_hdr = const_cast<nlmsghdr*>(hdr);
  const auto* tcm = static_cast<const tcmsg*>(nlmsg_data(mutable_hdr));
  nlattr* tb[TCA_MAX + 1] = {};
  if (nlmsg_parse(mutable_hdr, sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0 || !tb[TCA_KIND]) {
    return std::nullopt;
  }
  Qdisc q;
  q.kind = nla_get_string(tb[TCA_KIND]);
  q.handle = tcm->tcm_handle;
  q.parent = tcm->tcm_parent;
  nlattr* opts = tb[TCA_OPTIONS];
  if (q.kind == "tbf" && opts != nullptr) {
    nlattr* tbf[TCA_TBF_MAX + 1] = {};
    if (nla_parse_nested(tbf, TCA_TBF_MAX, opts, nullptr) == 0 && tbf[TCA_TBF_PARMS] &&
        nla_len(tbf[TCA_TBF_PARMS]) >= static_cast<int>(sizeof(tc_tbf_qopt))) {
      tc_tbf_qopt opt{};
      std::memcpy(&opt, nla_data(tbf[TCA_TBF_PARMS]), sizeof(opt));
      q.tbf.rate_bytes = opt.rate.rate;
      q.tbf.buffer_ticks = opt.buffer;
      q.tbf.limit_bytes = opt.limit;
      if (tbf[TCA_TBF_RATE64]) {
        q.tbf.rate_bytes = nla_get_u64(tbf[TCA_TBF_RATE64]);
      }
    }
  } else if (q.kind == "htb" && opts != nullptr) {
    nlattr* htb[TCA_HTB_MAX + 1] = {};
    if (nla_parse_nested(htb, TCA_HTB_MAX, opts, nullptr) == 0 && htb[TCA_HTB_INIT] &&
        nla_len(htb[TCA_HTB_INIT]) >= static_cast<int>(sizeof(tc_htb_glob))) {
      tc_htb_glob glob{};
      std::memcpy(&glob, nla_data(htb[TCA_HTB_INIT]), sizeof(glob));
      q.htb_default = glob.defcls;
      if (htb[TCA_HTB_DIRECT_QLEN]) {
        q.htb_direct_qlen = nla_get_u32(htb[TCA_HTB_DIRECT_QLEN]);
      }
    }
  } else if ((q.kind == "pfifo" || q.kind == "bfifo") && opts != nullptr &&
             nla_len(opts) >= static_cast<int>(sizeof(tc_fifo_qopt))) {
    tc_fifo_qopt opt{};
    std::memcpy(&opt, nla_data(opts), sizeof(opt));
    q.fifo_limit = opt.limit;
  }
  return std::make_pair(tcm->tcm_ifindex, q);
}

Status PutActions(nl_msg* msg, const std::vector<Action>& actions) {
  nlattr* list = nla_nest_start(msg, TCA_U32_ACT);
  if (list == nullptr) {
    return Error(kErrKernel, "netlink: cannot encode actions");
  }
  int order = 1;
  int r = 0;
  for (const Action& a : actions) {
    nlattr* item = nla_nest_start(msg, order++);
    if (item == nullptr) {
      return Error(kErrKernel, "netlink: cannot encode actions");
    }
    if (a.kind == ActionKind::kMirredEgressRedirect) {
      r |= nla_put_string(msg, TCA_ACT_KIND, "mirred");
      nlattr* opts = nla_nest_start(msg, TCA_ACT_OPTIONS);
      tc_mirred parms{};
      parms.action = a.verdict;
      parms.eaction = TCA_EGRESS_REDIR;
      parms.ifindex = static_cast<uint32_t>(a.ifindex);
      r |= nla_put(msg, TCA_MIRRED_PARMS, sizeof(parms), &parms);
      nla_nest_end(msg, opts);
    } else {
      r |= nla_put_string(msg, TCA_ACT_KIND, "gact");
      nlattr* opts = nla_nest_start(msg, TCA_ACT_OPTIONS);
      tc_gact parms{};
      parms.action = a.verdict;
      r |= nla_put(msg, TCA_GACT_PARMS, sizeof(parms), &parms);
      nla_nest_end(msg, opts);
    }
    nla_nest_end(msg, item);
  }
  nla_nest_end(msg, list);
  if (r < 0) {
    return Error(kErrKernel, "netlink: cannot encode actions");
  }
  return OkStatus();
}

std::vector<Action> ParseActions(nlattr* list) {
  std::vector<Action> out;
  nlattr* items[TCA_ACT_MAX_PRIO + 1] = {};
  if (nla_parse_nested(items, TCA_ACT_MAX_PRIO, list, nullptr) < 0) {
    return out;
  }
  for (int order = 1; order <= TCA_ACT_MAX_PRIO; ++order) {
    if (!items[order]) {
      continue;
    }
    nlattr* act[TCA_ACT_MAX + 1] = {};
    if (nla_parse_nested(act, TCA_ACT_MAX, items[order], nullptr) < 0 || !act[TCA_ACT_KIND] ||
        !act[TCA_ACT_OPTIONS]) {
      continue;
    }
    const std::string kind = nla_get_string(act[TCA_ACT_KIND]);
    Action a;
    if (kind == "mirred") {
      nlattr* opts[TCA_MIRRED_MAX + 1] = {};
      if (nla_parse_nested(opts, TCA_MIRRED_MAX, act[TCA_ACT_OPTIONS], nullptr) < 0 ||
          !opts[TCA_MIRRED_PARMS]) {
        continue;
      }
      tc_mirred parms{};
      std::memcpy(&parms, nla_data(opts[TCA_MIRRED_PARMS]), sizeof(parms));
      a.verdict = parms.action;
      a.ifindex = static_cast<int>(parms.ifindex);
      if (parms.eaction != TCA_EGRESS_REDIR) {
        // Mirroring or ingress redirection is not something we create: never equal to a plan.
        a.kind = ActionKind::kGact;
        a.verdict = -1000 - parms.eaction;
      }
    } else if (kind == "gact") {
      nlattr* opts[TCA_GACT_MAX + 1] = {};
      if (nla_parse_nested(opts, TCA_GACT_MAX, act[TCA_ACT_OPTIONS], nullptr) < 0 ||
          !opts[TCA_GACT_PARMS]) {
        continue;
      }
      tc_gact parms{};
      std::memcpy(&parms, nla_data(opts[TCA_GACT_PARMS]), sizeof(parms));
      a.kind = ActionKind::kGact;
      a.verdict = parms.action;
    } else {
      a.kind = ActionKind::kGact;
      a.verdict = -1000;  // an action kind we do not model: never equal to a planned one
    }
    out.push_back(a);
  }
  return out;
}

std::optional<Filter> ParseFilter(const nlmsghdr* hdr) {
  if (hdr->nlmsg_type != RTM_NEWTFILTER) {
    return std::nullopt;
  }
  auto* mutable_hdr = const_cast<nlmsghdr*>(hdr);
  const auto* tcm = static_cast<const tcmsg*>(nlmsg_data(mutable_hdr));
  nlattr* tb[TCA_MAX + 1] = {};
  if (nlmsg_parse(mutable_hdr, sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0 || !tb[TCA_KIND] ||
      !tb[TCA_OPTIONS]) {
    return std::nullopt;
  }
  Filter f;
  f.parent = tcm->tcm_parent;
  f.pref = static_cast<uint16_t>(tcm->tcm_info >> 16);
  f.protocol = ntohs(static_cast<uint16_t>(tcm->tcm_info & 0xffff));
  f.handle = tcm->tcm_handle;
  const std::string kind = nla_get_string(tb[TCA_KIND]);
  if (kind != "u32") {
    // Not a classifier we create: report it with no keys so it never matches a plan.
    f.terminal = false;
    f.classid = 0xffffffff;
    return f;
  }
  nlattr* u32[TCA_U32_MAX + 1] = {};
  if (nla_parse_nested(u32, TCA_U32_MAX, tb[TCA_OPTIONS], nullptr) < 0 || !u32[TCA_U32_SEL]) {
    return std::nullopt;  // the hash table itself ("fh 800: ht divisor 1"), not a node
  }
  const int sel_len = nla_len(u32[TCA_U32_SEL]);
  if (sel_len < static_cast<int>(sizeof(tc_u32_sel))) {
    return std::nullopt;
  }
  const auto* sel = static_cast<const tc_u32_sel*>(nla_data(u32[TCA_U32_SEL]));
  f.terminal = (sel->flags & TC_U32_TERMINAL) != 0;
  const int nkeys = sel->nkeys;
  if (sel_len < static_cast<int>(sizeof(tc_u32_sel) + nkeys * sizeof(tc_u32_key))) {
    return std::nullopt;
  }
  for (int i = 0; i < nkeys; ++i) {
    f.keys.push_back(U32Key{.mask = ntohl(sel->keys[i].mask),
                            .value = ntohl(sel->keys[i].val),
                            .offset = sel->keys[i].off});
  }
  if (u32[TCA_U32_CLASSID]) {
    f.classid = nla_get_u32(u32[TCA_U32_CLASSID]);
  }
  if (u32[TCA_U32_ACT]) {
    f.actions = ParseActions(u32[TCA_U32_ACT]);
  }
  return f;
}

}  // namespace

Result<std::optional<Qdisc>> GetQdisc(netlink::Socket& sock, int ifindex, uint32_t parent) {
  // Older kernels answer a qdisc GET only to NLM_F_ECHO (they send it as a notification).
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_GETQDISC, NLM_F_ECHO, ifindex, parent, 0, 0));
  std::optional<Qdisc> found;
  // ENOENT: nothing attached; EINVAL: no ingress queue / no such class on this device.
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(),
                               "get qdisc " + HandleString(parent) + " of " + Dev(ifindex),
                               [&](const nlmsghdr* hdr) {
                                 if (auto parsed = ParseQdisc(hdr)) {
                                   found = parsed->second;
                                 }
                               },
                               {ENOENT, EINVAL}));
  if (found && found->kind == "noop") {
    return std::optional<Qdisc>();  // the placeholder of an unattached ingress queue
  }
  return found;
}

Result<std::vector<std::pair<int, Qdisc>>> ListAllQdiscs(netlink::Socket& sock) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_GETQDISC, NLM_F_DUMP, 0, 0, 0, 0));
  std::vector<std::pair<int, Qdisc>> out;
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(), "list qdiscs", [&](const nlmsghdr* hdr) {
    if (auto parsed = ParseQdisc(hdr)) {
      out.push_back(std::move(*parsed));
    }
  }));
  return out;
}

Status AddQdisc(netlink::Socket& sock, int ifindex, const Qdisc& qdisc, bool replace) {
  const int flags = NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL);
  NG_ASSIGN_OR_RETURN(MsgPtr msg,
                      TcMessage(RTM_NEWQDISC, flags, ifindex, qdisc.parent, qdisc.handle, 0));
  NG_RETURN_IF_ERROR(PutQdiscOptions(msg.get(), qdisc));
  return sock.Request(msg.get(), "add qdisc " + Describe(qdisc) + " on " + Dev(ifindex));
}

Status DeleteQdisc(netlink::Socket& sock, int ifindex, const Qdisc& qdisc) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg,
                      TcMessage(RTM_DELQDISC, 0, ifindex, qdisc.parent, qdisc.handle, 0));
  return sock.Request(
      msg.get(),
      "delete qdisc " + qdisc.kind + " " + HandleString(qdisc.handle) + " on " + Dev(ifindex),
      {ENOENT, EINVAL, ENODEV});
}

Result<std::vector<HtbClass>> ListHtbClasses(netlink::Socket& sock, int ifindex) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_GETTCLASS, NLM_F_DUMP, ifindex, 0, 0, 0));
  std::vector<HtbClass> out;
  NG_RETURN_IF_ERROR(sock.Dump(
      msg.get(), "list classes of " + Dev(ifindex),
      [&](const nlmsghdr* hdr) {
        if (hdr->nlmsg_type != RTM_NEWTCLASS) {
          return;
        }
        auto* h = const_cast<nlmsghdr*>(hdr);
        const auto* tcm = static_cast<const tcmsg*>(nlmsg_data(h));
        nlattr* tb[TCA_MAX + 1] = {};
        if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0 || !tb[TCA_KIND] ||
            std::string(nla_get_string(tb[TCA_KIND])) != "htb" || !tb[TCA_OPTIONS]) {
          return;
        }
        nlattr* htb[TCA_HTB_MAX + 1] = {};
        if (nla_parse_nested(htb, TCA_HTB_MAX, tb[TCA_OPTIONS], nullptr) < 0 ||
            !htb[TCA_HTB_PARMS] ||
            nla_len(htb[TCA_HTB_PARMS]) < static_cast<int>(sizeof(tc_htb_opt))) {
          return;
        }
        tc_htb_opt opt{};
        std::memcpy(&opt, nla_data(htb[TCA_HTB_PARMS]), sizeof(opt));
        HtbClass c;
        c.classid = tcm->tcm_handle;
        // The kernel reports a top-level class's parent as "root"; it was added as X:0.
        c.parent = tcm->tcm_parent == kRootParent ? (c.classid & 0xffff0000u) : tcm->tcm_parent;
        c.rate_bytes = htb[TCA_HTB_RATE64] ? nla_get_u64(htb[TCA_HTB_RATE64]) : opt.rate.rate;
        c.ceil_bytes = htb[TCA_HTB_CEIL64] ? nla_get_u64(htb[TCA_HTB_CEIL64]) : opt.ceil.rate;
        c.buffer_ticks = opt.buffer;
        c.cbuffer_ticks = opt.cbuffer;
        c.quantum = opt.quantum;
        c.prio = opt.prio;
        out.push_back(c);
      },
      {ENOENT, EINVAL}));
  return out;
}

Status AddHtbClass(netlink::Socket& sock, int ifindex, const HtbClass& c) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_NEWTCLASS, NLM_F_CREATE | NLM_F_EXCL, ifindex,
                                            c.parent, c.classid, 0));
  nl_msg* m = msg.get();
  tc_htb_opt opt{};
  // As tc does: the 32-bit fields saturate and the 64-bit attributes carry large rates.
  opt.rate.rate = c.rate_bytes >= (uint64_t{1} << 32) ? ~0u : static_cast<uint32_t>(c.rate_bytes);
  opt.ceil.rate = c.ceil_bytes >= (uint64_t{1} << 32) ? ~0u : static_cast<uint32_t>(c.ceil_bytes);
  opt.buffer = c.buffer_ticks;
  opt.cbuffer = c.cbuffer_ticks;
  opt.quantum = c.quantum;
  opt.prio = c.prio;
  int r = nla_put_string(m, TCA_KIND, "htb");
  nlattr* nest = nla_nest_start(m, TCA_OPTIONS);
  r |= nest == nullptr ? -1 : 0;
  r |= nla_put(m, TCA_HTB_PARMS, sizeof(opt), &opt);
  if (c.rate_bytes >= (uint64_t{1} << 32)) {
    r |= nla_put_u64(m, TCA_HTB_RATE64, c.rate_bytes);
  }
  if (c.ceil_bytes >= (uint64_t{1} << 32)) {
    r |= nla_put_u64(m, TCA_HTB_CEIL64, c.ceil_bytes);
  }
  if (nest != nullptr) {
    nla_nest_end(m, nest);
  }
  if (r < 0) {
    return Error(kErrKernel, "netlink: cannot encode " + Describe(c));
  }
  return sock.Request(m, "add " + Describe(c) + " on " + Dev(ifindex));
}

Result<std::vector<Filter>> ListFilters(netlink::Socket& sock, int ifindex, uint32_t parent) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_GETTFILTER, NLM_F_DUMP, ifindex, parent, 0, 0));
  std::vector<Filter> out;
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(),
                               "list filters " + HandleString(parent) + " of " + Dev(ifindex),
                               [&](const nlmsghdr* hdr) {
                                 if (auto f = ParseFilter(hdr)) {
                                   out.push_back(std::move(*f));
                                 }
                               },
                               {ENOENT, EINVAL}));
  return out;
}

Status AddFilter(netlink::Socket& sock, int ifindex, const Filter& f) {
  const uint32_t info = (uint32_t{f.pref} << 16) | htons(f.protocol);
  NG_ASSIGN_OR_RETURN(
      MsgPtr msg, TcMessage(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, ifindex, f.parent, 0, info));
  nl_msg* m = msg.get();
  int r = nla_put_string(m, TCA_KIND, "u32");
  nlattr* opts = nla_nest_start(m, TCA_OPTIONS);
  if (opts == nullptr || r < 0) {
    return Error(kErrKernel, "netlink: cannot encode filter");
  }
  if (f.classid != 0) {
    r |= nla_put_u32(m, TCA_U32_CLASSID, f.classid);
  }
  std::vector<uint8_t> sel_buf(sizeof(tc_u32_sel) + f.keys.size() * sizeof(tc_u32_key));
  auto* sel = reinterpret_cast<tc_u32_sel*>(sel_buf.data());
  sel->flags = f.terminal ? TC_U32_TERMINAL : 0;
  sel->nkeys = static_cast<unsigned char>(f.keys.size());
  for (size_t i = 0; i < f.keys.size(); ++i) {
    sel->keys[i].mask = htonl(f.keys[i].mask);
    sel->keys[i].val = htonl(f.keys[i].value);
    sel->keys[i].off = f.keys[i].offset;
  }
  r |= nla_put(m, TCA_U32_SEL, static_cast<int>(sel_buf.size()), sel_buf.data());
  if (r < 0) {
    return Error(kErrKernel, "netlink: cannot encode filter");
  }
  if (!f.actions.empty()) {
    NG_RETURN_IF_ERROR(PutActions(m, f.actions));
  }
  nla_nest_end(m, opts);
  return sock.Request(m, "add filter " + Describe(f) + " on " + Dev(ifindex));
}

Status DeleteFilters(netlink::Socket& sock, int ifindex, uint32_t parent, uint16_t pref,
                     uint16_t protocol) {
  const uint32_t info = (uint32_t{pref} << 16) | htons(protocol);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, TcMessage(RTM_DELTFILTER, 0, ifindex, parent, 0, info));
  return sock.Request(msg.get(),
                      "delete filters pref " + std::to_string(pref) + " of " +
                          HandleString(parent) + " on " + Dev(ifindex),
                      {ENOENT, EINVAL, ENODEV});
}

Result<std::optional<Qdisc>> NetlinkKernel::GetQdisc(int ifindex, uint32_t parent) {
  return tc::GetQdisc(sock_, ifindex, parent);
}
Status NetlinkKernel::AddQdisc(int ifindex, const Qdisc& qdisc, bool replace) {
  return tc::AddQdisc(sock_, ifindex, qdisc, replace);
}
Status NetlinkKernel::DeleteQdisc(int ifindex, const Qdisc& qdisc) {
  return tc::DeleteQdisc(sock_, ifindex, qdisc);
}
Result<std::vector<HtbClass>> NetlinkKernel::ListHtbClasses(int ifindex) {
  return tc::ListHtbClasses(sock_, ifindex);
}
Status NetlinkKernel::AddHtbClass(int ifindex, const HtbClass& cls) {
  return tc::AddHtbClass(sock_, ifindex, cls);
}
Result<std::vector<Filter>> NetlinkKernel::ListFilters(int ifindex, uint32_t parent) {
  return tc::ListFilters(sock_, ifindex, parent);
}
Status NetlinkKernel::AddFilter(int ifindex, const Filter& filter) {
  return tc::AddFilter(sock_, ifindex, filter);
}
Status NetlinkKernel::DeleteFilters(int ifindex, uint32_t parent, uint16_t pref,
                                    uint16_t protocol) {
  return tc::DeleteFilters(sock_, ifindex, parent, pref, protocol);
}

Result<std::optional<netlink::LinkInfo>> NetlinkKernel::CreateIfb(
    const netlink::IfbSpec& spec,
    const std::function<Status(const netlink::LinkInfo&)>& while_down) {
  return netlink::CreateIfb(sock_, spec, while_down);
}
Result<std::optional<netlink::LinkInfo>> NetlinkKernel::GetLinkByName(const std::string& name) {
  return netlink::GetLinkByName(sock_, name);
}
Status NetlinkKernel::UpdateLink(const netlink::LinkInfo& current, const netlink::IfbSpec& spec) {
  return netlink::UpdateLink(sock_, current, spec);
}
Status NetlinkKernel::DeleteLink(const std::string& name) {
  return netlink::DeleteLink(sock_, name);
}
Status NetlinkKernel::DeleteLinkByIndex(int index) {
  return netlink::DeleteLinkByIndex(sock_, index);
}
Status NetlinkKernel::RetireLink(const netlink::LinkInfo& link, const std::string& new_name) {
  return netlink::RetireLink(sock_, link, new_name);
}

}  // namespace nodegate::tc
