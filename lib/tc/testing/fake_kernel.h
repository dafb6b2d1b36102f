#pragma once
// An in-memory tc::Kernel (lib/tc/kernel.h) with the kernel's semantics as a shaper meets
// them, in the manner of knftables' Fake: devices with their root, class-leaf and ingress
// qdiscs, HTB classes and u32 filters kept as data; the kernel's refusals (a second qdisc at
// a parent without replace, a class without an HTB root, a filter without its qdisc, a
// redirect to a device that does not exist, a device name taken); deleting a qdisc takes its
// classes, leaves and filters with it, deleting a device everything on it. It can be told to
// fail an operation (or its Nth call), and dumps as text for assertions.
//
//   tc::testing::FakeKernel kernel;
//   const netlink::LinkInfo veth = kernel.AddDevice("veth1", "veth");
//   kernel.FailOperation(tc::testing::FakeKernel::kAddFilter);
//   EXPECT_FALSE(bandwidth::ApplyPlan(kernel, plan, veth).ok());
//   EXPECT_EQ(kernel.Dump(), before);

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/tc/kernel.h"

namespace nodegate::tc::testing {

class FakeKernel final : public Kernel {
 public:
  // The operations a fault can name.
  static constexpr char kGetQdisc[] = "get qdisc";
  static constexpr char kAddQdisc[] = "add qdisc";
  static constexpr char kDeleteQdisc[] = "delete qdisc";
  static constexpr char kListClasses[] = "list classes";
  static constexpr char kAddClass[] = "add class";
  static constexpr char kListFilters[] = "list filters";
  static constexpr char kAddFilter[] = "add filter";
  static constexpr char kDeleteFilters[] = "delete filters";
  static constexpr char kCreateIfb[] = "create ifb";
  static constexpr char kGetLink[] = "get link";
  static constexpr char kUpdateLink[] = "update link";
  static constexpr char kDeleteLink[] = "delete link";  // by name or by index
  static constexpr char kRetireLink[] = "retire link";

  // A device that is there before the test (the host veth): up, with no qdisc of its own.
  netlink::LinkInfo AddDevice(const std::string& name, const std::string& kind,
                              uint32_t mtu = 1500);
  // The `nth` call (counted from now, 1 = the next) of `operation` fails with code 100.
  void FailOperation(const std::string& operation, int nth = 1);

  // Every device by index: "dev NAME kind KIND mtu N up|down [alias "A"]", then its qdiscs
  // (root, leaves by parent, ingress), classes and filters, one per line as tc::Describe
  // writes them.
  std::string Dump() const;
  // The device as it is now; nullopt when there is none of that name.
  std::optional<netlink::LinkInfo> Link(const std::string& name) const;
  // Calls of `operation` so far.
  int calls(const std::string& operation) const;

  // tc::Kernel
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
  struct Device {
    netlink::LinkInfo link;
    std::map<uint32_t, Qdisc> qdiscs;  // by parent: root, ingress, class leaves
    std::vector<HtbClass> classes;
    std::vector<Filter> filters;
    uint32_t next_filter = 0x800;
  };
  // Counts the call and returns the injected fault it meets, if any.
  Status Enter(const std::string& operation, const std::string& what);
  Result<Device*> Find(int ifindex, const std::string& what);
  // Removes what hangs below the qdisc at `parent` (classes, leaves, filters).
  static void DropChildren(Device& device, const Qdisc& qdisc);

  std::map<int, Device> devices_;
  int next_index_ = 2;  // 1 is lo
  std::map<std::string, int> calls_;
  struct PendingFault {
    std::string operation;
    int remaining = 1;
  };
  std::vector<PendingFault> faults_;
};

}  // namespace nodegate::tc::testing
