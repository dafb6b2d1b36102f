// portmap with the nftables backend, in private namespaces: real traffic, re-ADD, CHECK, GC,
// DEL without prevResult or with other mappings, host port conflicts (nothing applied),
// per-network conditions, concurrency, and removal of the reference nftables backend's rules.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "lib/cni/conf.h"
#include "lib/netfilter/element_batch.h"
#include "lib/netfilter/nft.h"
#include "lib/netfilter/query.h"
#include "lib/sys/netns.h"
#include "plugins/portmap/nftables/rules.h"
#include "tests/portmap/harness.h"

namespace nodegate::portmap::testing {
namespace {

// Elements of our maps that carry `comment "<id>"`.
int Elements(const TestNetns& node, const std::string& id) {
  const std::string ruleset = NftRuleset(node);
  // Elements are listed one per line only when there are several; count occurrences.
  int n = 0;
  const std::string needle = "comment \"" + id + "\" :";
  for (size_t pos = ruleset.find(needle); pos != std::string::npos;
       pos = ruleset.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(PortmapNftables, RealTraffic) {
  NG_REQUIRE_ROOT();
  RunTrafficScenario("nftables");
}

TEST(PortmapNftables, ReAddReplacesCheckFindsGapsDelIsIdempotent) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnre");
  const std::string first = Conf("nftables", kMappings, kPrev);
  const std::string second =
      Conf("nftables", R"([{"hostPort":9999,"containerPort":99,"protocol":"tcp"}])", kPrev);
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", first).exit_code, 0);
  EXPECT_EQ(Elements(node, "ctr1"), 3);  // tcp on the v4 hostIP, udp on v4 and v6
  const auto readd = Portmap(node, "ADD", "ctr1", first);
  ASSERT_EQ(readd.exit_code, 0) << readd.out << readd.err;
  EXPECT_EQ(Elements(node, "ctr1"), 3) << "re-ADD must not duplicate";
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", second).exit_code, 0);
  EXPECT_EQ(Elements(node, "ctr1"), 2) << NftRuleset(node);  // 9999 on v4 and v6
  EXPECT_EQ(NftRuleset(node).find("8080"), std::string::npos) << "re-ADD must replace";
  EXPECT_EQ(Portmap(node, "CHECK", "ctr1", second).exit_code, 0);
  const auto stale = Portmap(node, "CHECK", "ctr1", first);
  EXPECT_NE(stale.exit_code, 0);
  EXPECT_NE(stale.out.find("\"code\": 103"), std::string::npos) << stale.out;

  // An element removed behind the plugin's back is a CHECK failure.
  const std::string map = "n" + std::string("a355caee90") + "_dnat_any_v6";
  node.MustRun("nft delete element inet cni_hostport " + map + " '{ tcp . 9999 }'");
  EXPECT_NE(Portmap(node, "CHECK", "ctr1", second).exit_code, 0);

  // DEL with the mappings of an earlier ADD still removes everything of the container; a
  // repeated DEL and a DEL without prevResult succeed.
  const auto del = Portmap(node, "DEL", "ctr1", first);
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(Elements(node, "ctr1"), 0) << NftRuleset(node);
  EXPECT_EQ(Portmap(node, "DEL", "ctr1", Conf("nftables", kMappings, "")).exit_code, 0);
  EXPECT_EQ(CountLines(node.Run("nft list set inet cni_hostport owned").output, "\" . \""), 0)
      << "ownership records left behind";
}

TEST(PortmapNftables, OwnershipIncludesTheNetworkAndConflictsChangeNothing) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnown");
  const std::string a =
      Conf("nftables", R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp"}])",
           PrevResult("10.88.0.2/16", ""), "", "neta");
  const std::string b =
      Conf("nftables", R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp"}])",
           PrevResult("10.99.0.2/16", ""), "", "netb");
  ASSERT_EQ(Portmap(node, "ADD", "same-id", a).exit_code, 0);
  ASSERT_EQ(Portmap(node, "ADD", "same-id", b).exit_code, 0);
  ASSERT_EQ(Portmap(node, "DEL", "same-id", a).exit_code, 0);
  EXPECT_EQ(Portmap(node, "CHECK", "same-id", b).exit_code, 0)
      << "DEL on network a removed network b's mapping of the same container ID";

  // A host port another container holds on the same network: the whole ADD fails with 102
  // and nothing of the new container is applied (its first mapping was free).
  const std::string conflict = Conf(
      "nftables",
      R"([{"hostPort":7070,"containerPort":70,"protocol":"tcp"},{"hostPort":8080,"containerPort":80,"protocol":"tcp"}])",
      PrevResult("10.99.0.3/16", ""), "", "netb");
  const auto add = Portmap(node, "ADD", "intruder", conflict);
  EXPECT_EQ(add.exit_code, 1);
  EXPECT_NE(add.out.find("\"code\": 102"), std::string::npos) << add.out;
  // Both mappings went in one command; the message still names the port that is taken.
  EXPECT_NE(add.out.find("host port tcp . 8080 is already mapped"), std::string::npos) << add.out;
  EXPECT_EQ(Elements(node, "intruder"), 0) << NftRuleset(node);
  // The runtime's DEL after the failed ADD must not take the other container's port.
  ASSERT_EQ(Portmap(node, "DEL", "intruder", conflict).exit_code, 0);
  EXPECT_EQ(Portmap(node, "CHECK", "same-id", b).exit_code, 0);
}

TEST(PortmapNftables, ConditionsStayWithTheirNetwork) {
  NG_REQUIRE_ROOT();
  Topology topo;
  EchoServer server(topo.container.path(), 80, "c");
  const std::string prev = PrevResult(topo.container_ip4 + "/24", "");
  // Network "blocked" only accepts clients from 203.0.113.0/24; network "open" has no
  // conditions. The reference applied the last ADD's conditions to every container.
  const std::string blocked =
      Conf("nftables", R"([{"hostPort":8001,"containerPort":80,"protocol":"tcp"}])", prev,
           R"(,"conditionsV4":["ip","saddr","203.0.113.0/24"])", "blocked");
  const std::string open = Conf(
      "nftables", R"([{"hostPort":8002,"containerPort":80,"protocol":"tcp"}])", prev, "", "open");
  ASSERT_EQ(Portmap(topo.node, "ADD", "c1", blocked).exit_code, 0);
  ASSERT_EQ(Portmap(topo.node, "ADD", "c2", open).exit_code, 0);
  EXPECT_EQ(TcpRequest(topo.client.path(), topo.node_client_ip4, 8002), "c");
  EXPECT_FALSE(TcpRequest(topo.client.path(), topo.node_client_ip4, 8001, 500));
  EXPECT_EQ(Portmap(topo.node, "CHECK", "c1", blocked).exit_code, 0);
  EXPECT_EQ(Portmap(topo.node, "CHECK", "c2", open).exit_code, 0);
}

TEST(PortmapNftables, GcRemovesStaleContainersOfThisNetworkOnly) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmngc");
  for (const char* id : {"ctr1", "ctr2", "ctr3"}) {
    ASSERT_EQ(Portmap(node, "ADD", id,
                      Conf("nftables",
                           std::string(R"([{"hostPort":)") +
                               (id[3] == '1'   ? "81"
                                : id[3] == '2' ? "82"
                                               : "83") +
                               R"(,"containerPort":80,"protocol":"tcp"}])",
                           kPrev))
                  .exit_code,
              0);
  }
  ASSERT_EQ(Portmap(node, "ADD", "ctr3",
                    Conf("nftables", R"([{"hostPort":83,"containerPort":80,"protocol":"tcp"}])",
                         kPrev, "", "othernet"))
                .exit_code,
            0);
  const std::string gc =
      R"({"cniVersion":"1.1.0","name":"rnet","type":"portmap","backend":"nftables",)"
      R"("cni.dev/valid-attachments":[{"containerID":"ctr2","ifname":"eth0"}]})";
  const auto out = Portmap(node, "GC", "", gc);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(Elements(node, "ctr1"), 0);
  EXPECT_EQ(Elements(node, "ctr2"), 2);
  EXPECT_EQ(Elements(node, "ctr3"), 2) << "othernet's ctr3 must stay";
  EXPECT_EQ(Portmap(node, "STATUS", "", gc).exit_code, 0);
}

// What the reference's nftables backend (v1.9) leaves for a container is removed by our DEL.
// A DEL whose config cannot be read removes the container's mappings from every backend, so
// an nftables mapping goes even though the unreadable config could not say which backend.
TEST(PortmapNftables, DelWithAnUnreadableConfigRemovesTheContainersRules) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnbad");
  ASSERT_EQ(Portmap(node, "ADD", "ctr1", Conf("nftables", kMappings, kPrev)).exit_code, 0);
  ASSERT_GT(CountLines(NftRuleset(node), "8080"), 0);
  const auto del =
      Portmap(node, "DEL", "ctr1",
              Conf("", R"([{"HostPort":"8080","ContainerPort":80,"Protocol":"tcp"}])", kPrev));
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  const std::string after = NftRuleset(node);
  EXPECT_EQ(CountLines(after, "8080"), 0) << after;
  EXPECT_EQ(CountLines(after, "5353"), 0) << after;
}

TEST(PortmapNftables, DelRemovesTheReferenceBackendsRules) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnref");
  const std::string reference =
      "table ip cni_hostport {\n"
      " chain hostports { ip daddr 10.88.0.1 tcp dport 8080 dnat to 10.88.0.2:80 comment \"ctr1\"\n"
      "  udp dport 5353 dnat to 10.88.0.2:53 comment \"ctr1\"\n"
      "  udp dport 6000 dnat to 10.88.0.9:53 comment \"other\"; }\n"
      " chain hostip_hostports { }\n"
      " chain hostports_all { jump hostip_hostports\n jump hostports; }\n"
      " chain prerouting { type nat hook prerouting priority dstnat; policy accept;\n"
      "  fib daddr type local jump hostports_all; }\n"
      " chain masquerading { type nat hook postrouting priority srcnat; policy accept;\n"
      "  ip saddr 10.88.0.2 ip daddr 10.88.0.2 masquerade comment \"ctr1\"\n"
      "  ip saddr 127.0.0.1 ip daddr 10.88.0.2 masquerade comment \"ctr1\"; }\n"
      "}\n"
      "table ip6 cni_hostport {\n"
      " chain hostports { udp dport 5353 dnat to [fd00:88::2]:53 comment \"ctr1\"; }\n"
      " chain masquerading { type nat hook postrouting priority srcnat; policy accept;\n"
      "  ip6 saddr fd00:88::2 ip6 daddr fd00:88::2 masquerade comment \"ctr1\"; }\n"
      "}\n";
  node.MustRun("cat > /tmp/ng-pm-ref-" + node.name() + ".nft <<'EOF'\n" + reference +
               "EOF\nnft -f /tmp/ng-pm-ref-" + node.name() + ".nft && rm /tmp/ng-pm-ref-" +
               node.name() + ".nft");
  ASSERT_EQ(CountLines(NftRuleset(node), "comment \"ctr1\""), 6);
  const auto del = Portmap(node, "DEL", "ctr1", Conf("nftables", kMappings, kPrev));
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  const std::string after = NftRuleset(node);
  EXPECT_EQ(CountLines(after, "comment \"ctr1\""), 0) << after;
  EXPECT_EQ(CountLines(after, "comment \"other\""), 1) << after;
}

TEST(PortmapNftables, ConcurrentAddsAndDels) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmncc");
  constexpr int kContainers = 50;
  std::vector<int> add_rc(kContainers, -1), del_rc(kContainers, -1);
  std::atomic<int> next{0};
  auto conf = [](int i) {
    return Conf("nftables",
                "[{\"hostPort\":" + std::to_string(20000 + i) +
                    ",\"containerPort\":80,\"protocol\":\"udp\"}]",
                PrevResult("198.51.100." + std::to_string(10 + i) + "/24", ""));
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < kContainers; i = next++) {
        const std::string id = "nc" + std::to_string(i);
        add_rc[i] = Portmap(node, "ADD", id, conf(i)).exit_code;
        if (i % 2 == 1) del_rc[i] = Portmap(node, "DEL", id, conf(i)).exit_code;
      }
    });
  }
  for (auto& t : workers) t.join();
  for (int i = 0; i < kContainers; ++i) {
    EXPECT_EQ(add_rc[i], 0) << i;
    if (i % 2 == 1) {
      EXPECT_EQ(del_rc[i], 0) << i;
      EXPECT_EQ(Elements(node, "nc" + std::to_string(i)), 0) << i;
    } else {
      EXPECT_EQ(Elements(node, "nc" + std::to_string(i)), 1) << i;
    }
  }
  // Network chains written once: one jump per hook chain.
  EXPECT_EQ(CountLines(NftRuleset(node), "fib daddr type local jump"), 2);
}

// DEL finds the owner's families by reading its markers, not from prevResult: an ADD with
// both families and a DEL whose prevResult has only IPv4 still remove everything.
TEST(PortmapNftables, DelRemovesEveryFamilyOfTheOwner) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnfam");
  ASSERT_EQ(Portmap(node, "ADD", "dual", Conf("nftables", kMappings, kPrev)).exit_code, 0);
  ASSERT_EQ(Elements(node, "dual"), 3);
  const auto del =
      Portmap(node, "DEL", "dual", Conf("nftables", kMappings, PrevResult("10.88.0.2/16", "")));
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(Elements(node, "dual"), 0) << NftRuleset(node);
  EXPECT_EQ(CountLines(node.Run("nft list set inet cni_hostport owned").output, "\" . \""), 0);
}

// The plugin hands its nfnetlink sockets to a helper that outlives it (lib/netfilter/release.h).
// The helper must hold nothing of the caller's: a runtime reads the plugin's stdout and stderr
// until EOF, so both pipes must be closed for good the moment the plugin has exited.
TEST(PortmapNftables, ReleaseHelperKeepsNoneOfTheCallersPipes) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnrel");
  const std::string conf = Conf("nftables", kMappings, kPrev);
  for (const char* command : {"ADD", "DEL"}) {
    int in[2], out[2], err[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
    const std::string binary = nodegate::testing::BinPath("portmap");
    const std::string netns = node.path();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int ns = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) ::_exit(120);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      const std::string cmd = std::string("CNI_COMMAND=") + command;
      const char* env[] = {
          cmd.c_str(),       "CNI_CONTAINERID=rel",   "CNI_NETNS=/run/netns/ctr-rel",
          "CNI_IFNAME=eth0", "CNI_PATH=/usr/lib/cni", nullptr};
      const char* argv[] = {binary.c_str(), nullptr};
      ::execve(binary.c_str(), const_cast<char* const*>(argv), const_cast<char* const*>(env));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    ASSERT_EQ(::write(in[1], conf.data(), conf.size()), static_cast<ssize_t>(conf.size()));
    ::close(in[1]);
    std::string output;
    char buffer[4096];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof(buffer))) > 0;) output.append(buffer, n);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << ": " << output;
    // Right after the exit (the helper lives on for at least a grace period): stdout has been
    // read to EOF above, and stderr must hang up without waiting.
    pollfd hangup{err[0], POLLIN, 0};
    ASSERT_EQ(::poll(&hangup, 1, 0), 1) << command << ": stderr is still held open";
    EXPECT_NE(hangup.revents & POLLHUP, 0) << command;
    ::close(out[0]);
    ::close(err[0]);
  }
  EXPECT_EQ(Elements(node, "rel"), 0);
}

// Runs `script` through libnftables inside `node`.
void RunScript(const TestNetns& node, const nft::Script& script) {
  auto scope = sys::NetnsScope::Enter(node.path());
  ASSERT_TRUE(scope.ok()) << scope.error().msg;
  auto nft = netfilter::Nft::Open();
  ASSERT_TRUE(nft.ok()) << nft.error().msg;
  auto run = nft->Run(script.text());
  ASSERT_TRUE(run.ok()) << run.ToError("script").msg << "\n" << script.text();
}

// The config an ADD of container `id` parses.
Result<Config> ParseAdd(const std::string& text, const std::string& id) {
  auto conf = cni::ParseNetConf(text, ConfigShape());
  if (!conf.ok()) return conf.error();
  return ParseConfig(*conf, {.container_id = id, .ifname = "eth0", .purpose = Purpose::kAdd});
}

Result<std::vector<netfilter::ElementRefusal>> WriteInside(const TestNetns& node,
                                                           const Config& config) {
  auto scope = sys::NetnsScope::Enter(node.path());
  if (!scope.ok()) return scope.error();
  const auto plan = nft::AddElementPlan(config);
  if (!plan) return Error(kErrInternal, "no element plan for this config");
  return netfilter::WriteElements(netfilter::kNfprotoInet, nft::kTable, plan->changes);
}

Result<std::vector<netfilter::ElementRefusal>> WriteDeleteInside(const TestNetns& node,
                                                                 const nft::ElementPlan& plan) {
  auto scope = sys::NetnsScope::Enter(node.path());
  if (!scope.ok()) return scope.error();
  return netfilter::WriteElements(netfilter::kNfprotoInet, nft::kTable, plan.changes);
}

// ADD's element batch (straight netlink) leaves the table exactly as ADD's script (through
// libnftables) does, for every mapping shape: the same listing, keys, values, comments,
// ownership records and hairpin ranges. The batch is refused, applying nothing, where the
// script path has work to do (no chains yet: ENOENT; a re-ADD: EEXIST on the marker). DEL's
// batch likewise removes what the script removes, or nothing when an element is missing.
TEST(PortmapNftables, ElementBatchWritesWhatTheScriptWrites) {
  NG_REQUIRE_ROOT();
  const std::string long_id(200, 'c');  // comments are cut at 128 bytes
  // A pod with 600 host ports and the longest comment: a map's elements span several messages
  // (a nested attribute holds at most 64 KiB).
  std::string many = "[";
  for (int port = 20000; port < 20600; ++port) {
    many += (port > 20000 ? "," : "") + std::string(R"({"hostPort":)") + std::to_string(port) +
            R"(,"containerPort":53,"protocol":"udp"})";
  }
  many += "]";
  struct Case {
    std::string extra, mappings, id;
  };
  const std::vector<Case> cases = {
      {"", kMappings, "ctr1"},
      {R"(,"snat":false)", kMappings, "ctr1"},
      {R"(,"masqAll":true)", kMappings, long_id},
      {"", R"([{"hostPort":80,"containerPort":8080,"protocol":"sctp"},
               {"hostPort":81,"containerPort":81,"protocol":"tcp","hostIP":"fd00:88::1"},
               {"hostPort":82,"containerPort":82,"protocol":"udp","hostIP":"::"},
               {"hostPort":65535,"containerPort":1,"protocol":"tcp","hostIP":"0.0.0.0"}])",
       "ctr1"},
      {"", many, long_id},
  };
  for (const auto& [extra, mappings, id] : cases) {
    auto parsed = ParseAdd(Conf("nftables", mappings, kPrev, extra), id);
    ASSERT_TRUE(parsed.ok()) << parsed.error().msg;
    const Config& config = *parsed;
    TestNetns by_batch("ng-pmnb1"), by_script("ng-pmnb2");
    // No chains yet: the batch is refused (the netcfg assertion first) and changes nothing.
    auto early = WriteInside(by_batch, config);
    ASSERT_TRUE(early.ok()) << early.error().msg;
    ASSERT_FALSE(early->empty());
    EXPECT_EQ(early->front().change, 0u);
    EXPECT_EQ(early->front().error, ENOENT);
    EXPECT_EQ(NftRuleset(by_batch), "");

    nft::Script setup;
    nft::AppendSetup(config, setup);
    RunScript(by_batch, setup);
    RunScript(by_script, setup);
    auto written = WriteInside(by_batch, config);
    ASSERT_TRUE(written.ok()) << written.error().msg;
    EXPECT_TRUE(written->empty()) << extra << mappings.substr(0, 80) << ": refused at change "
                                  << written->front().change << ": " << written->front().ext_ack;
    nft::Script add;
    nft::AppendAdd(config, true, true, add);
    RunScript(by_script, add);
    const std::string listing = NftRuleset(by_batch);
    EXPECT_NE(listing.find("comment \"" + nft::ElementComment(id) + "\" :"), std::string::npos)
        << listing;
    EXPECT_EQ(listing, NftRuleset(by_script)) << extra << mappings.substr(0, 80);

    // A second batch for the same owner is a re-ADD: refused at its markers (and nowhere
    // else: its elements are the same), nothing applied.
    auto again = WriteInside(by_batch, config);
    ASSERT_TRUE(again.ok()) << again.error().msg;
    ASSERT_FALSE(again->empty());
    const auto plan = nft::AddElementPlan(config);
    for (const auto& refusal : *again) {
      EXPECT_EQ(plan->roles[refusal.change], nft::Role::kMarker) << refusal.change;
      EXPECT_EQ(refusal.error, EEXIST);
    }
    EXPECT_EQ(NftRuleset(by_batch), listing);

    // DEL: the same equivalence, and the same all-or-nothing when one element is missing.
    std::vector<net::Family> families;
    for (const auto f : {net::Family::kV4, net::Family::kV6}) {
      if (config.container(f)) families.push_back(f);
    }
    const auto del = nft::DeleteElementPlan(config, families);
    ASSERT_TRUE(del.has_value());
    const nft::Element first = nft::ContainerElements(config, families.front()).front();
    by_batch.MustRun("nft delete element inet cni_hostport " + first.map + " '{ " + first.key +
                     " }'");
    const std::string partial = NftRuleset(by_batch);
    auto refused = WriteDeleteInside(by_batch, *del);
    ASSERT_TRUE(refused.ok()) << refused.error().msg;
    ASSERT_FALSE(refused->empty());
    EXPECT_EQ(refused->front().error, ENOENT);
    EXPECT_EQ(NftRuleset(by_batch), partial);
    by_batch.MustRun("nft add element inet cni_hostport " + first.map + " '{ " + first.key +
                     " comment \"" + nft::ElementComment(id) + "\" : " + first.value + " }'");
    ASSERT_EQ(NftRuleset(by_batch), listing);
    auto deleted = WriteDeleteInside(by_batch, *del);
    ASSERT_TRUE(deleted.ok()) << deleted.error().msg;
    EXPECT_TRUE(deleted->empty());
    nft::Script remove;
    for (const auto f : families) {
      nft::AppendDelete(nft::OwnerTag(config.network_name, id), nft::ContainerElements(config, f),
                        f, remove);
    }
    RunScript(by_script, remove);
    EXPECT_EQ(NftRuleset(by_batch), NftRuleset(by_script));
    EXPECT_EQ(NftRuleset(by_batch).find("comment \"" + nft::ElementComment(id) + "\" :"),
              std::string::npos)
        << "elements left behind";
  }
}

// The netlink queries behind DEL and STATUS: one set element looked up by key, and a probe.
TEST(PortmapNftables, ElementQueriesReadOneElement) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnq");
  node.MustRun(
      "nft add table inet qt && nft add set inet qt owned '{ type ifname . ifname; }' && "
      "nft add element inet qt owned '{ \"abc\" . \"all4\" }'");
  auto scope = nodegate::sys::NetnsScope::Enter(node.path());
  ASSERT_TRUE(scope.ok()) << scope.error().msg;
  const netfilter::SetRef owned{.family = netfilter::kNfprotoInet, .table = "qt", .set = "owned"};
  auto present = netfilter::HasElement(owned, netfilter::IfnameKey({"abc", "all4"}));
  ASSERT_TRUE(present.ok()) << present.error().msg;
  EXPECT_TRUE(*present);
  auto other = netfilter::HasElement(owned, netfilter::IfnameKey({"abc", "all6"}));
  ASSERT_TRUE(other.ok()) << other.error().msg;
  EXPECT_FALSE(*other);
  auto no_table =
      netfilter::HasElement({.family = netfilter::kNfprotoInet, .table = "absent", .set = "owned"},
                            netfilter::IfnameKey({"abc", "all4"}));
  ASSERT_TRUE(no_table.ok()) << no_table.error().msg;
  EXPECT_FALSE(*no_table);
  auto tables = netfilter::HasTables({{netfilter::kNfprotoInet, "absent"},
                                      {netfilter::kNfprotoInet, "qt"},
                                      {/*NFPROTO_IPV4*/ 2, "qt"}});
  ASSERT_TRUE(tables.ok()) << tables.error().msg;
  EXPECT_EQ(*tables, (std::vector<bool>{false, true, false}));
  EXPECT_TRUE(netfilter::ProbeNfTables().ok());
}

TEST(PortmapNftables, BadInputChangesNothing) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnbad");
  ASSERT_EQ(Portmap(node, "ADD", "keep", Conf("nftables", kMappings, kPrev)).exit_code, 0);
  const std::string before = NftRuleset(node);
  const std::vector<std::string> bad = {
      Conf("nftables", R"([{"hostPort":0,"containerPort":80,"protocol":"tcp"}])", kPrev),
      Conf("nftables", R"([{"hostPort":80,"containerPort":70000,"protocol":"tcp"}])", kPrev),
      Conf("nftables", R"([{"hostPort":80,"containerPort":80,"protocol":"gre"}])", kPrev),
      Conf("nftables",
           R"([{"hostPort":80,"containerPort":80,"protocol":"tcp","hostIP":"192.0.2.1"}])",
           PrevResult("", "fd00:88::2/64")),
      Conf("nftables", kMappings, kPrev, R"(,"externalSetMarkChain":"X")"),
      Conf("nftables", kMappings, kPrev, R"(,"conditionsV6":["-s","::1"])"),
  };
  for (const auto& conf : bad) {
    const auto out = Portmap(node, "ADD", "bad", conf);
    EXPECT_EQ(out.exit_code, 1) << conf;
    EXPECT_NE(out.out.find("\"code\": 7"), std::string::npos) << conf << "\n" << out.out;
  }
  EXPECT_EQ(NftRuleset(node), before);
}

// Issue 13 row 8: the CNI spec allows long network names; the chain comments ("network
// <name>") must not exceed nft's 128-byte comment limit.
TEST(PortmapNftables, LongNetworkNameWorks) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-pmnlong");
  const std::string name(200, 'n');
  const std::string conf = Conf("nftables", kMappings, kPrev, "", name);
  const auto add = Portmap(node, "ADD", "ctr-long", conf);
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(Elements(node, "ctr-long"), 3) << NftRuleset(node);
  const auto check = Portmap(node, "CHECK", "ctr-long", conf);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // A short name keeps its plain comment (the layout older versions wrote).
  ASSERT_EQ(
      Portmap(node, "ADD", "ctr-short",
              Conf("nftables", R"([{"hostPort":81,"containerPort":80,"protocol":"tcp"}])", kPrev))
          .exit_code,
      0);
  EXPECT_NE(NftRuleset(node).find("comment \"network rnet\""), std::string::npos);
  const auto del = Portmap(node, "DEL", "ctr-long", conf);
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(Elements(node, "ctr-long"), 0) << NftRuleset(node);
  EXPECT_NE(Portmap(node, "CHECK", "ctr-long", conf).exit_code, 0);
}

// Issue 13 row 6: containers of one network whose subnets overlap (a /24, then a /16 around
// it, then a /24 inside both) or a network whose subnet changed: every ADD succeeds, hairpin
// traffic works for every container, and stale hairpin sources go once nobody needs them.
TEST(PortmapNftables, OverlappingContainerSubnetsHairpin) {
  NG_REQUIRE_ROOT();
  Topology topo;
  // A second container address in the same namespace, for a second "container".
  topo.container.MustRun("ip addr add 192.0.2.3/24 dev eth0");
  EchoServer server(topo.container.path(), 80, "c");
  auto conf = [](int port, const std::string& cidr) {
    return Conf(
        "nftables",
        R"([{"hostPort":)" + std::to_string(port) + R"(,"containerPort":80,"protocol":"tcp"}])",
        PrevResult(cidr, ""));
  };
  const std::string c1 = conf(8080, "192.0.2.2/24");
  const std::string c2 = conf(8081, "192.0.2.3/16");
  const std::string c3 = conf(8082, "192.0.2.2/25");
  auto add1 = Portmap(topo.node, "ADD", "c1", c1);
  ASSERT_EQ(add1.exit_code, 0) << add1.out << add1.err;
  auto add2 = Portmap(topo.node, "ADD", "c2", c2);
  ASSERT_EQ(add2.exit_code, 0) << add2.out << add2.err << NftRuleset(topo.node);
  auto add3 = Portmap(topo.node, "ADD", "c3", c3);
  ASSERT_EQ(add3.exit_code, 0) << add3.out << add3.err << NftRuleset(topo.node);
  for (const auto& [id, c] : {std::pair{"c1", c1}, {"c2", c2}, {"c3", c3}}) {
    const auto check = Portmap(topo.node, "CHECK", id, c);
    EXPECT_EQ(check.exit_code, 0) << id << check.out << check.err;
  }
  for (int port : {8080, 8081, 8082}) {
    EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, port), "c") << "hairpin " << port;
    EXPECT_EQ(TcpRequest(topo.client.path(), topo.node_client_ip4, port), "c") << port;
  }
  // A network whose subnet changed (c1 re-added with another subnet) still adds.
  const std::string moved = conf(8080, "192.0.2.2/23");
  auto readd = Portmap(topo.node, "ADD", "c1", moved);
  ASSERT_EQ(readd.exit_code, 0) << readd.out << readd.err;
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, 8081), "c");

  // DEL of c2 (whose /16 covered the others): the others still hairpin.
  ASSERT_EQ(Portmap(topo.node, "DEL", "c2", c2).exit_code, 0);
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, 8080), "c") << "after DEL c2";
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, 8082), "c") << "after DEL c2";
  EXPECT_EQ(Portmap(topo.node, "CHECK", "c1", moved).exit_code, 0);
  EXPECT_EQ(Portmap(topo.node, "CHECK", "c3", c3).exit_code, 0);
  // Only the outermost subnet is in the set.
  const std::string set =
      topo.node.Run("nft list set inet cni_hostport na355caee90_hairpin_v4").output;
  EXPECT_NE(set.find("192.0.0.0/16"), std::string::npos) << set;
  EXPECT_EQ(set.find("192.0.2.0/"), std::string::npos) << set;
  // GC keeps the sources the remaining containers are in.
  const auto keep = Portmap(
      topo.node, "GC", "",
      R"({"cniVersion":"1.1.0","name":"rnet","type":"portmap","backend":"nftables",)"
      R"("cni.dev/valid-attachments":[{"containerID":"c1","ifname":"eth0"},{"containerID":"c3","ifname":"eth0"}]})");
  ASSERT_EQ(keep.exit_code, 0) << keep.out << keep.err;
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, 8080), "c") << "after GC";
  EXPECT_EQ(Portmap(topo.node, "CHECK", "c1", moved).exit_code, 0);
  ASSERT_EQ(Portmap(topo.node, "DEL", "c1", moved).exit_code, 0);
  ASSERT_EQ(Portmap(topo.node, "DEL", "c3", c3).exit_code, 0);
  // GC (no valid attachments left) removes the hairpin sources nobody needs.
  const std::string gc =
      R"({"cniVersion":"1.1.0","name":"rnet","type":"portmap","backend":"nftables",)"
      R"("cni.dev/valid-attachments":[]})";
  const auto out = Portmap(topo.node, "GC", "", gc);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  const std::string ruleset = NftRuleset(topo.node);
  EXPECT_EQ(ruleset.find("192.0."), std::string::npos) << ruleset;
}

}  // namespace
}  // namespace nodegate::portmap::testing
