#pragma once
// Shared pieces of the portmap netns tests: a node with a container and an external client,
// config builders, plugin calls (ours or the reference, run inside the node namespace), and a
// tiny echo server/client pair that runs inside any namespace (TCP and UDP, IPv4 and IPv6).
//
// Address plan (documentation ranges, only inside test namespaces):
//   node <-> container   192.0.2.1/24 <-> 192.0.2.2/24,       2001:db8:2::1/64 <-> ::2
//   node <-> client      198.51.100.1/24 <-> 198.51.100.2/24, 2001:db8:51::1/64 <-> ::2

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plugins/portmap/iptables/mode.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::portmap::testing {

using nodegate::testing::CommandResult;
using nodegate::testing::CountListed;
using nodegate::testing::NodeWithContainer;
using nodegate::testing::PluginOutput;
using nodegate::testing::TestNetns;

struct Topology : NodeWithContainer {
  TestNetns client{"ng-cli"};
  std::string client_ip4 = "198.51.100.2";
  std::string node_client_ip4 = "198.51.100.1";
  std::string client_ip6 = "2001:db8:51::2";
  std::string node_client_ip6 = "2001:db8:51::1";
  Topology();
};

// prevResult of a container with these addresses (CIDR) on eth0; empty strings are left out.
std::string PrevResult(const std::string& v4_cidr, const std::string& v6_cidr);

// The container most tests of both backends use: 10.88.0.2/16 and fd00:88::2/64 on eth0, with
// two mappings, TCP 8080 on the node address 10.88.0.1 only and UDP 5353 on every address.
inline const std::string kPrev = PrevResult("10.88.0.2/16", "fd00:88::2/64");
inline const std::string kMappings =
    R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"10.88.0.1"},)"
    R"({"hostPort":5353,"containerPort":53,"protocol":"udp"}])";

// A portmap request config. `extra` is spliced into the top level (starts with a comma).
std::string Conf(const std::string& backend, const std::string& mappings,
                 const std::string& prev_result, const std::string& extra = "",
                 const std::string& network = "rnet", const std::string& version = "1.0.0");

// The iptables mode the iptables-layout tests run in, for ours and the reference alike:
//   nft     the default of these machines and of current distributions: `iptables` on PATH
//           is iptables-nft, so both plugins write nf_tables;
//   legacy  iptables, ip6tables and their -save/-restore first on PATH are the legacy tools
//           (a PATH folder of links), so both write the x_tables.
// Both plugins choose the mode from the iptables on their PATH; nothing else is configured.
void UseIptablesMode(IptablesMode mode);
IptablesMode IptablesModeUnderTest();
// "iptables-nft" / "iptables-legacy" (or ip6tables-...): the tool of the mode under test.
std::string IptablesTool(bool v6 = false);
// "nft" / "legacy", for test names.
std::string ModeParamName(const ::testing::TestParamInfo<IptablesMode>& info);

// Runs portmap (ours or Debian's) in `node`, with the PATH of the mode under test.
PluginOutput Portmap(const TestNetns& node, const std::string& command,
                     const std::string& container_id, const std::string& conf,
                     bool reference = false);
// The same with more environment variables (NODEGATE_PORTMAP_LOCK, NODEGATE_CNI_CACHE_DIR).
PluginOutput Portmap(const TestNetns& node, const std::string& command,
                     const std::string& container_id, const std::string& conf, bool reference,
                     const std::map<std::string, std::string>& env);
// Our portmap, returning once the helper it starts at exit has exited too: the UDP conntrack
// flush runs there (docs/performance/conntrack.md, "After the plugin's exit"). For tests
// of that flush.
PluginOutput PortmapAndHelper(const TestNetns& node, const std::string& command,
                              const std::string& container_id, const std::string& conf);

// ADD of each configuration fails with exit status 1 and CNI error code 7 (invalid network
// config), each failure reported as a test failure naming the configuration.
void ExpectEachRefusedAsInvalid(const TestNetns& node, const std::vector<std::string>& confs);

// `iptables-save -t nat` (or ip6tables) of the mode under test, without comment lines.
std::string SaveNat(const TestNetns& node, bool v6 = false);
// SaveNat(node) + SaveNat(node, true), in one command.
std::string SaveNatBothFamilies(const TestNetns& node);
// `nft list ruleset`.
std::string NftRuleset(const TestNetns& node);

// Serves TCP and UDP on `port` (IPv4 and IPv6) inside `netns`, answering every request with
// `tag`. Killed when destroyed.
class EchoServer {
 public:
  EchoServer(const std::string& netns_path, int port, const std::string& tag);
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

 private:
  pid_t pid_ = -1;
};

// One request from inside `netns`: the reply, or nullopt on timeout/refusal.
std::optional<std::string> TcpRequest(const std::string& netns_path, const std::string& ip,
                                      int port, int timeout_ms = 1500);
std::optional<std::string> UdpRequest(const std::string& netns_path, const std::string& ip,
                                      int port, int timeout_ms = 1500, int source_port = 0);

// The real-traffic scenario both backends must pass: TCP and UDP from a client namespace over
// IPv4 and IPv6, from the node through 127.0.0.1, hairpin from the container to its own host
// port, a hostIP mapping only on that address, CHECK, and DEL stopping all of it.
void RunTrafficScenario(const std::string& backend);

// Counts lines of `text` containing `needle`.
int CountLines(const std::string& text, const std::string& needle);

}  // namespace nodegate::portmap::testing
