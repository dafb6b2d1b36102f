#pragma once
// Reads and writes the Qdisc and Filter values of objects.h through rtnetlink. Messages are
// built with libnl's nl_msg/nla API rather than libnl-route's qdisc objects: libnl computes a
// TBF's buffer with its own rounding and always sends a rate table, and we need the
// reference's exact tc_tbf_qopt to read the same in `tc qdisc show`.
//
// Every call is O(objects on one device): a GET for a qdisc, a per-device dump for filters.
// Only ListAllQdiscs walks the whole namespace (for GC).
//
// Kernel is the same operations (and the ifb devices a shaper redirects to) behind an
// interface, so that a shaper's logic runs against lib/tc/testing/fake_kernel.h in unit tests:
//
//   tc::NetlinkKernel kernel(sock);
//   NG_ASSIGN_OR_RETURN(std::optional<tc::Qdisc> root, kernel.GetQdisc(index, tc::kRootParent));

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/netlink/link.h"
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

// The calls of a shaper: the functions above on one device at a time, and the devices of
// lib/netlink/link.h an egress shaper makes (ifbs). Each has the semantics of the function of
// the same name.
class Kernel {
 public:
  virtual ~Kernel() = default;

  virtual Result<std::optional<Qdisc>> GetQdisc(int ifindex, uint32_t parent) = 0;
  virtual Status AddQdisc(int ifindex, const Qdisc& qdisc, bool replace) = 0;
  virtual Status DeleteQdisc(int ifindex, const Qdisc& qdisc) = 0;
  virtual Result<std::vector<HtbClass>> ListHtbClasses(int ifindex) = 0;
  virtual Status AddHtbClass(int ifindex, const HtbClass& cls) = 0;
  virtual Result<std::vector<Filter>> ListFilters(int ifindex, uint32_t parent) = 0;
  virtual Status AddFilter(int ifindex, const Filter& filter) = 0;
  virtual Status DeleteFilters(int ifindex, uint32_t parent, uint16_t pref, uint16_t protocol) = 0;

  virtual Result<std::optional<netlink::LinkInfo>> CreateIfb(
      const netlink::IfbSpec& spec,
      const std::function<Status(const netlink::LinkInfo&)>& while_down) = 0;
  virtual Result<std::optional<netlink::LinkInfo>> GetLinkByName(const std::string& name) = 0;
  virtual Status UpdateLink(const netlink::LinkInfo& current, const netlink::IfbSpec& spec) = 0;
  virtual Status DeleteLink(const std::string& name) = 0;
  virtual Status DeleteLinkByIndex(int index) = 0;
  virtual Status RetireLink(const netlink::LinkInfo& link, const std::string& new_name) = 0;
};

// The kernel's, through rtnetlink on `sock` (which outlives it).
class NetlinkKernel final : public Kernel {
 public:
  explicit NetlinkKernel(netlink::Socket& sock) : sock_(sock) {}

  Result<std::optional<Qdisc>> GetQdisc(int ifindex, uint32_t parent) override;
  Status AddQdisc(int ifindex, const Qdisc& qdisc, bool replace) override;
  Status DeleteQdisc(int ifindex, const Qdisc& qdisc) override;
  Result<std::vector<HtbClass>> ListHtbClasses(int ifindex) override;
  Status AddHtbClass(int ifindex, const HtbClass& cls) override;
  Result<std::vector<Filter>> ListFilters(int ifindex, uint32_t parent) override;
  Status AddFilter(int ifindex, const Filter& filter) override;
  Status DeleteFilters(int ifindex, uint32_t parent, uint16_t pref, uint16_t protocol) override;

  Result<std::optional<netlink::LinkInfo>> CreateIfb(
      const netlink::IfbSpec& spec,
      const std::function<Status(const netlink::LinkInfo&)>& while_down) override;
  Result<std::optional<netlink::LinkInfo>> GetLinkByName(const std::string& name) override;
  Status UpdateLink(const netlink::LinkInfo& current, const netlink::IfbSpec& spec) override;
  Status DeleteLink(const std::string& name) override;
  Status DeleteLinkByIndex(int index) override;
  Status RetireLink(const netlink::LinkInfo& link, const std::string& new_name) override;

 private:
  netlink::Socket& sock_;
};

}  // namespace nodegate::tc
