#pragma once
// Applies, verifies and removes a ShapingPlan on the node through `kernel` (tc::NetlinkKernel
// on a socket of the node's namespace; unit tests pass lib/tc/testing/fake_kernel.h's).
// Apply converges: it reads what is there, leaves matching objects alone, replaces the rest,
// and on failure puts back what it found. Check reports the first object or parameter
// that differs from the plan. Remove deletes only objects of the shapes the plugin (or the
// reference) creates.

#include <optional>
#include <string>

#include "lib/base/result.h"
#include "lib/netlink/link.h"
#include "lib/tc/kernel.h"
#include "plugins/bandwidth/plan.h"

namespace nodegate::bandwidth {

// Makes the node match `plan` for the host veth `veth`. Returns the ifb (for the ADD result)
// when the plan has one.
Result<std::optional<netlink::LinkInfo>> ApplyPlan(tc::Kernel& kernel, const ShapingPlan& plan,
                                                   const netlink::LinkInfo& veth);

// Code 103 (kErrCheckFailed) naming the first difference.
Status CheckPlan(tc::Kernel& kernel, const ShapingPlan& plan, const netlink::LinkInfo& veth);

// Removes the plugin's qdiscs and filters from the host veth (tbf/htb root with handle 1:,
// filters at the plugin's prefs on the ingress qdisc, and the ingress qdisc once it holds
// nothing else).
Status RemoveHostObjects(tc::Kernel& kernel, int veth_index);

// Deletes the ifb; already gone is success.
Status RemoveIfb(tc::Kernel& kernel, const std::string& name);

// DEL's removal of the ifb. Deleting a net device waits for an RCU barrier (15-25 ms, most of
// a DEL), so when the process allows detached work (sys/detached.h) the ifb is taken out of
// service at once (down, renamed to RetiredIfbName so its name is free for a new ADD) and a
// detached helper deletes it. Otherwise, and for a device that is not an ifb, it is deleted
// here. Already gone is success.
Status RetireIfb(tc::Kernel& kernel, const std::string& name);

}  // namespace nodegate::bandwidth
