// The join of declared, mapped and listening claims: one case per verdict and per overlap rule.

#include "ports/join.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "ports/declared.h"

namespace nodegate::ports {
namespace {

DeclaredClaim Declared(const std::string& ip, int port, const std::string& pod = "ns/web") {
  return {{ip, "TCP", port}, pod, "web", "web.yaml"};
}

MappedClaim Mapped(const std::string& ip, int port, const std::string& container,
                   std::optional<std::string> pod = std::nullopt) {
  return {{ip, "TCP", port}, "nftables", container, "cbr0", "10.88.0.2:80", std::move(pod)};
}

ListeningClaim Listening(const std::string& ip, int port, int pid = 42) {
  return {{ip, "TCP", port}, pid, "python3", std::nullopt};
}

std::vector<std::string> Verdicts(const NodeClaims& claims) {
  std::vector<std::string> out;
  for (const PortRow& row : JoinClaims(claims)) {
    out.push_back(row.key.host_ip + " " + std::string(VerdictName(row.verdict)));
  }
  return out;
}

using V = std::vector<std::string>;

TEST(JoinClaims, DeclaredAndListeningIsOk) {
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 53)}, {}, {Listening("0.0.0.0", 53)}}), V{"0.0.0.0 ok"});
}

TEST(JoinClaims, DeclaredNothingListens) {
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 53)}, {}, {Listening("0.0.0.0", 54)}}),
            (V{"0.0.0.0 declared-not-listening", "0.0.0.0 listening-not-declared"}));
}

TEST(JoinClaims, ListenerOnOtherProtocolDoesNotServe) {
  NodeClaims claims{{Declared("0.0.0.0", 53)}, {}, {Listening("0.0.0.0", 53)}};
  claims.listening[0].key.protocol = "UDP";
  EXPECT_EQ(Verdicts(claims),
            (V{"0.0.0.0 declared-not-listening", "0.0.0.0 listening-not-declared"}));
}

TEST(JoinClaims, WildcardDeclarationIsServedBySpecificOrV6Listener) {
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 80)}, {}, {Listening("10.0.0.5", 80)}}),
            (V{"0.0.0.0 ok", "10.0.0.5 ok"}));
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 80)}, {}, {Listening("::", 80)}}),
            (V{"0.0.0.0 ok", ":: ok"}));
}

TEST(JoinClaims, SpecificDeclarationIsServedByWildcardListenerOnly) {
  EXPECT_EQ(Verdicts({{Declared("10.0.0.5", 80)}, {}, {Listening("::", 80)}}),
            (V{"10.0.0.5 ok", ":: ok"}));
  EXPECT_EQ(Verdicts({{Declared("10.0.0.5", 80)}, {}, {Listening("10.0.0.6", 80)}}),
            (V{"10.0.0.5 declared-not-listening", "10.0.0.6 listening-not-declared"}));
}

TEST(JoinClaims, MappingOfTheDeclaringPodServes) {
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 8080)}, {Mapped("0.0.0.0", 8080, "c1", "ns/web")}, {}}),
            V{"0.0.0.0 ok"});
}

TEST(JoinClaims, MappingWithUnknownPodIsTakenAsDeclaredWhenSomePodDeclares) {
  EXPECT_EQ(Verdicts({{Declared("0.0.0.0", 8080)}, {Mapped("0.0.0.0", 8080, "c1")}, {}}),
            V{"0.0.0.0 ok"});
}

TEST(JoinClaims, MappingOfAnotherPodIsNotDeclared) {
  EXPECT_EQ(
      Verdicts({{Declared("0.0.0.0", 8080)}, {Mapped("0.0.0.0", 8080, "c1", "ns/other")}, {}}),
      V{"0.0.0.0 mapped-not-declared"});
}

TEST(JoinClaims, LeakedMapping) {
  EXPECT_EQ(Verdicts({{}, {Mapped("0.0.0.0", 8080, "c1")}, {}}), V{"0.0.0.0 mapped-not-declared"});
}

TEST(JoinClaims, TwoContainersMapOnePort) {
  EXPECT_EQ(Verdicts({{}, {Mapped("0.0.0.0", 8080, "c1"), Mapped("0.0.0.0", 8080, "c2")}, {}}),
            V{"0.0.0.0 mapped-twice"});
  // A specific address under a wildcard mapping of the same family also competes.
  EXPECT_EQ(Verdicts({{}, {Mapped("0.0.0.0", 8080, "c1"), Mapped("10.0.0.5", 8080, "c2")}, {}}),
            (V{"0.0.0.0 mapped-twice", "10.0.0.5 mapped-twice"}));
}

TEST(JoinClaims, OneContainerInBothFamiliesIsNotMappedTwice) {
  NodeClaims claims{{Declared("0.0.0.0", 8080)},
                    {Mapped("0.0.0.0", 8080, "c1", "ns/web"), Mapped("::", 8080, "c1", "ns/web")},
                    {}};
  EXPECT_EQ(Verdicts(claims), (V{"0.0.0.0 ok", ":: ok"}));
  // Two containers in different families do not compete either.
  claims.mapped[1].container_id = "c2";
  EXPECT_EQ(Verdicts(claims), (V{"0.0.0.0 ok", ":: ok"}));
}

TEST(JoinClaims, ListenerWithoutDeclaration) {
  EXPECT_EQ(Verdicts({{}, {}, {Listening("127.0.0.1", 22)}}),
            V{"127.0.0.1 listening-not-declared"});
}

TEST(JoinClaims, RowsAreOrderedByPortThenProtocolThenHostIp) {
  NodeClaims claims{{Declared("10.0.0.1", 90), Declared("0.0.0.0", 80)}, {}, {}};
  claims.declared[1].key.protocol = "UDP";
  claims.declared.push_back(Declared("0.0.0.0", 80));
  const auto rows = JoinClaims(claims);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].key.ToString(), "80/TCP on 0.0.0.0");
  EXPECT_EQ(rows[1].key.ToString(), "80/UDP on 0.0.0.0");
  EXPECT_EQ(rows[2].key.ToString(), "90/TCP on 10.0.0.1");
}

TEST(DeclaredClaimsOf, HostNetworkContainerPortsAreHostPorts) {
  const admit::Pod pod = admit::testing::MakePod("dns")
                             .Namespace("kube-system")
                             .HostNetwork()
                             .Container("coredns")
                             .ContainerPort(53, "UDP")
                             .ContainerPort(9153)
                             .Obj();
  const auto claims = DeclaredClaimsOf({pod});
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].key.ToString(), "53/UDP on 0.0.0.0");
  EXPECT_EQ(claims[1].key.ToString(), "9153/TCP on 0.0.0.0");
  EXPECT_EQ(claims[0].pod, "kube-system/dns");
  EXPECT_EQ(claims[0].container, "coredns");
}

TEST(DeclaredClaimsOf, OrdinaryPodPortsWithoutHostPortAreNotClaims) {
  const admit::Pod pod =
      admit::testing::MakePod("web").Container("web").ContainerPort(80).HostPort("/::0/8080").Obj();
  const auto claims = DeclaredClaimsOf({pod});
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].key.ToString(), "8080/TCP on ::");  // canonical host IP
}

}  // namespace
}  // namespace nodegate::ports
