// libiptc entry encoding of the planned rules: layout, alignment, and rule comparison.
#include "plugins/portmap/iptables/legacy/encode.h"

#include <gtest/gtest.h>

#include <variant>

#include "plugins/portmap/iptables/rules.h"
#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using testing::ConfText;
using testing::Parse;

TEST(IptablesEncode, LayoutAndComparison) {
  auto config = Parse(ConfText(""));
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    const ipt::Plan plan = ipt::BuildPlan(*config, family);
    for (const auto& rule : plan.container_rules) {
      const auto blob = ipt::EncodeRule(rule, family);
      ASSERT_GT(blob.size(), ipt::EntryHeaderSize(family));
      EXPECT_EQ(blob.size() % 8, 0u);
      EXPECT_TRUE(
          ipt::SameRule(blob.data(), ipt::TargetName(rule), blob, ipt::TargetName(rule), family));
    }
    // Rules differing only in the port, the target data or the target are different rules.
    const auto& dnat = plan.container_rules.back();
    ipt::Rule other_port = dnat;
    std::get<ipt::PortMatch>(other_port.matches[0]).dport = 1;
    ipt::Rule other_target = dnat;
    std::get<ipt::DnatTarget>(other_target.target).port = 1;
    const auto a = ipt::EncodeRule(dnat, family);
    EXPECT_FALSE(
        ipt::SameRule(ipt::EncodeRule(other_port, family).data(), "DNAT", a, "DNAT", family));
    EXPECT_FALSE(
        ipt::SameRule(ipt::EncodeRule(other_target, family).data(), "DNAT", a, "DNAT", family));
    EXPECT_FALSE(ipt::SameRule(a.data(), "MARK", a, "DNAT", family));
  }
  const auto entry =
      ipt::EncodeRule(ipt::BuildPlan(*config, net::Family::kV4).entry_rules[0], net::Family::kV4);
  EXPECT_EQ(ipt::EntryCommentText(entry.data(), net::Family::kV4),
            R"(dnat name: "rnet" id: "ctr1")");
}

}  // namespace
}  // namespace nodegate::portmap
