#pragma once
// Reads and writes the Qdisc and Filter values of objects.h through rtnetlink. Messages are
// built with libnl's nl_msg/nla API rather than libnl-route's qdisc objects: libnl computes a
// TBF's buffer with its own rounding and always sends a rate table, and we need the
// reference's exact tc_tbf_qopt to read the same in `tc qdisc show`.
//
// Every call is O(objects on one device): a GET for a qdisc, a per-device dump for filters.
// Only ListAllQdiscs walks the whole namespace (for GC).

#include <optional>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/netlink/socket.h"
#include "lib/tc/objects.h"

namespace nodegate::tc {

// The qdisc at `parent` (kRootParent, kIngressParent, or a class such as 1:2) of a device.
// std::nullopt when nothing is attached there. Kernel defaults (noqueue, pfifo_fast, mq) are
// returned as read, with handle 0.
Result<std::optional<Qdisc>> GetQdisc(netlink::Socket& sock, int ifindex, uint32_t parent);

// Every qdisc in the namespace, with its device's ifindex.
Result<std::vector<std::pair<int, Qdisc>>> ListAllQdiscs(netlink::Socket& sock);

// Adds `qdisc`. With replace, an existing qdisc at the same parent is replaced (or changed in
// place when kind and handle match); without, an existing one is an error (EEXIST).
Status AddQdisc(netlink::Socket& sock, int ifindex, const Qdisc& qdisc, bool replace);

// Deletes the qdisc at qdisc.parent (with its children and filters). Already gone: success.
Status DeleteQdisc(netlink::Socket& sock, int ifindex, const Qdisc& qdisc);

// The HTB classes of a device.
Result<std::vector<HtbClass>> ListHtbClasses(netlink::Socket& sock, int ifindex);

// Adds an HTB class (an existing one is an error).
Status AddHtbClass(netlink::Socket& sock, int ifindex, const HtbClass& cls);

// The u32 filter nodes attached to `parent` (hash-table entries are skipped).
Result<std::vector<Filter>> ListFilters(netlink::Socket& sock, int ifindex, uint32_t parent);

// Adds one u32 node; the kernel picks its handle (800::800, 800::801, ...).
Status AddFilter(netlink::Socket& sock, int ifindex, const Filter& filter);

// Deletes every filter at (parent, pref, protocol). Already gone: success.
Status DeleteFilters(netlink::Socket& sock, int ifindex, uint32_t parent, uint16_t pref,
                     uint16_t protocol);

}  // namespace nodegate::tc
