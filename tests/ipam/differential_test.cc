// Differential tests against Debian's reference host-local (v1.1.1, versions up to 1.0.0):
// the same call sequence in two fresh data directories must print the same results (byte for
// byte), the same error texts, and leave the same files. Then state made by one is read,
// checked and released by the other.
#include <gtest/gtest.h>

#include <set>

#include "tests/ipam/process_util.h"

namespace nodegate::ipam::testing {
namespace {

struct Step {
  std::string command;
  std::string id;
  std::string args = "";
  std::string ifname = "eth0";
};

class DifferentialTest : public IpamProcessTest {
 protected:
  // Runs `steps` on both plugins with the config `ipam_body` and compares every step.
  void Compare(const std::string& label, const std::string& ipam_body,
               const std::vector<Step>& steps, const std::string& version = "1.0.0",
               const std::string& extra = "") {
    const std::string ours_dir = root_ + "/" + label + "-ours";
    const std::string ref_dir = root_ + "/" + label + "-ref";
    const std::string ours_conf = MakeConf(ours_dir, ipam_body, version, extra);
    const std::string ref_conf = MakeConf(ref_dir, ipam_body, version, extra);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      const std::string where =
          label + " step " + std::to_string(i) + " " + s.command + " " + s.id + " " + s.args;
      PluginOutput ours = Run(Ours(), s.command, s.id, ours_conf, s.args, s.ifname);
      PluginOutput ref = Run(Ref(), s.command, s.id, ref_conf, s.args, s.ifname);
      ASSERT_EQ(ours.exit_code, ref.exit_code)
          << where << "\nours: " << ours.out << ours.err << "\nref: " << ref.out << ref.err;
      if (ref.exit_code == 0) {
        EXPECT_EQ(ours.out, ref.out) << where;
      } else {
        auto o = ErrorJson(ours), r = ErrorJson(ref);
        EXPECT_EQ(o.value("msg", "?"), r.value("msg", "!")) << where;
        EXPECT_NE(o.value("code", 0), 0) << where;
      }
      EXPECT_EQ(Snapshot(ours_dir + "/net1"), Snapshot(ref_dir + "/net1")) << where;
    }
  }
};

const char* kSmall = R"("ranges":[[{"subnet":"10.5.0.0/29","rangeStart":"10.5.0.2",
    "rangeEnd":"10.5.0.5","gateway":"10.5.0.3"}]])";

TEST_F(DifferentialTest, RoundRobinExhaustionAndRelease) {
  Compare("small", kSmall,
          {{"ADD", "a"},
           {"ADD", "b"},
           {"ADD", "c"},
           {"ADD", "d"},
           {"DEL", "b"},
           {"ADD", "e"},
           {"CHECK", "e"},
           {"CHECK", "zz"},
           {"DEL", "a"},
           {"DEL", "a"},
           {"ADD", "f"},
           {"ADD", "g"},
           {"DEL", "nobody"},
           {"ADD", "f", "", "net1"}});
}

TEST_F(DifferentialTest, DualStackRoutesAndDnsInEveryVersion) {
  const std::string resolv = root_ + "/resolv.conf";
  std::ofstream(resolv) << "nameserver 192.0.2.53\ndomain example.test\nsearch a.test b.test\n"
                           "options ndots:3\n";
  const std::string body = R"("resolvConf":")" + resolv + R"(",
      "routes":[{"dst":"0.0.0.0/0"},{"dst":"198.51.100.0/24","gw":"10.5.0.1"}],
      "ranges":[[{"subnet":"10.5.0.0/24"}],[{"subnet":"2001:db8:5::/120"}]])";
  for (const char* v : {"1.0.0", "0.4.0", "0.3.1", "0.3.0", "0.2.0", "0.1.0"}) {
    Compare(std::string("dual-") + v, body,
            {{"ADD", "a"}, {"ADD", "b"}, {"DEL", "a"}, {"ADD", "c"}}, v);
  }
}

TEST_F(DifferentialTest, SeveralRangesInOneSetWrap) {
  Compare("multi", R"("ranges":[[
      {"subnet":"10.6.0.0/29","rangeStart":"10.6.0.5","rangeEnd":"10.6.0.6"},
      {"subnet":"10.6.1.0/29","rangeStart":"10.6.1.2","rangeEnd":"10.6.1.3"}]])",
          {{"ADD", "a"},
           {"ADD", "b"},
           {"ADD", "c"},
           {"DEL", "a"},
           {"ADD", "d"},
           {"ADD", "e"},
           {"DEL", "c"},
           {"ADD", "f"}});
}

TEST_F(DifferentialTest, Ipv6AndLegacySubnet) {
  Compare("v6", R"("ranges":[[{"subnet":"2001:db8:6::/125"}]])",
          {{"ADD", "a"}, {"ADD", "b"}, {"DEL", "a"}, {"ADD", "c"}, {"ADD", "d"}});
  Compare("legacy", R"("subnet":"10.7.0.0/28","rangeStart":"10.7.0.10","gateway":"10.7.0.11",
                       "ranges":[[{"subnet":"2001:db8:7::/120"}]])",
          {{"ADD", "a"}, {"ADD", "b"}, {"DEL", "a"}, {"ADD", "c"}});
}

TEST_F(DifferentialTest, RequestedAddresses) {
  Compare("req-args", kSmall,
          {{"ADD", "a", "IP=10.5.0.4"},
           {"ADD", "b", "IP=10.5.0.4"},  // taken
           {"ADD", "b", "IP=10.5.0.3"},  // the gateway
           {"ADD", "b", "IP=10.5.0.9"},  // outside: allocated, then released
           {"ADD", "b", "IgnoreUnknown=1;FOO=bar;IP=10.5.0.5/24"},
           {"ADD", "c", "ip=10.5.0.2"},  // keys are case-sensitive
           {"ADD", "c"}});
  Compare("req-conf", kSmall, {{"ADD", "a"}, {"ADD", "b"}}, "1.0.0",
          R"("args":{"cni":{"ips":["10.5.0.5"]}},)");
  Compare("req-runtime", kSmall, {{"ADD", "a"}, {"ADD", "b"}}, "1.0.0",
          R"("runtimeConfig":{"ips":["10.5.0.4/29"]},)");
  Compare("ipranges", R"("ranges":[[{"subnet":"10.8.0.0/24"}]])",
          {{"ADD", "a"}, {"ADD", "b"}, {"DEL", "a"}}, "1.0.0",
          R"("runtimeConfig":{"ipRanges":[[{"subnet":"10.9.0.0/29"}]]},)");
}

TEST_F(DifferentialTest, ConfigErrorsHaveTheReferenceText) {
  Compare("err1", R"("ranges":[[{"subnet":"10.5.0.1/24"}]])", {{"ADD", "a"}});
  Compare("err2", R"("ranges":[[{"subnet":"10.5.0.0/31"}]])", {{"ADD", "a"}});
  Compare("err3", R"("ranges":[[{"subnet":"10.5.0.0/24"}],[{"subnet":"10.5.0.0/25"}]])",
          {{"ADD", "a"}});
  Compare("err4", R"("ranges":[[{"subnet":"10.5.0.0/24"},{"subnet":"2001:db8::/64"}]])",
          {{"ADD", "a"}});
  Compare("err5", R"("ranges":[[{"subnet":"10.5.0.0/24","rangeStart":"10.5.1.1"}]])",
          {{"ADD", "a"}});
  Compare("err6", R"("type":"host-local")", {{"ADD", "a"}});
  Compare("err7", R"("ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.2.0.0/24"}]])",
          {{"ADD", "a"}}, "0.2.0");
}

TEST_F(DifferentialTest, LegacyIdOnlyFilesReleasedInPasses) {
  for (const std::string& body :
       {std::string(kSmall),
        std::string(R"("ranges":[[{"subnet":"10.5.0.0/29","rangeStart":"10.5.0.2",
            "rangeEnd":"10.5.0.5","gateway":"10.5.0.3"}],[{"subnet":"2001:db8::/120"}]])")}) {
    const std::string label = "legacy" + std::to_string(body.size());
    for (const char* who : {"-ours", "-ref"}) {
      const std::string dir = root_ + "/" + label + who + "/net1";
      fs::create_directories(dir);
      std::ofstream(dir + "/10.5.0.4") << "old";
      std::ofstream(dir + "/10.5.0.5") << "old\r\neth0";
    }
    Compare(label, body, {{"DEL", "old"}, {"DEL", "old"}, {"ADD", "x"}});
  }
}

// A switch from the reference: its reservations are on disk, our index is not. Without a
// last_reserved_ip.0 (or with one behind a run of reservations) the round robin walks over
// the taken addresses; ours knows them from its index rebuild instead of trying each, and
// must still pick what the reference picks: the holes in order, a dangling symlink and a
// folder named after an address counting as taken (the reference's exclusive create fails
// on both), then the first address after the run, wrapping at the range's end.
TEST_F(DifferentialTest, FirstCallsOnTheReferencesReservations) {
  const char* body = R"("ranges":[[{"subnet":"10.11.0.0/23","rangeEnd":"10.11.1.100"}]])";
  const std::set<int> holes = {7, 150, 299};
  const auto address = [](int i) {  // the i-th allocatable address: 10.11.0.2 on
    return "10.11." + std::to_string((i + 2) / 256) + "." + std::to_string((i + 2) % 256);
  };
  for (const std::string cursor : {"", "10.11.0.40", "10.11.1.100"}) {
    const std::string label = "switch" + cursor;
    for (const char* who : {"-ours", "-ref"}) {
      const std::string dir = root_ + "/" + label + who + "/net1";
      fs::create_directories(dir);
      for (int i = 0; i < 340; ++i) {
        if (!holes.count(i)) {
          std::ofstream(dir + "/" + address(i), std::ios::binary) << "fill" << i << "\r\neth0";
        }
      }
      fs::remove(dir + "/" + address(20));
      fs::create_directory_symlink("nowhere", dir + "/" + address(20));
      fs::remove(dir + "/" + address(21));
      fs::create_directory(dir + "/" + address(21));
      if (!cursor.empty()) {
        std::ofstream(dir + "/last_reserved_ip.0") << cursor;
      }
    }
    Compare(label, body,
            {{"ADD", "a"}, {"ADD", "b"}, {"ADD", "c"}, {"ADD", "d"}, {"DEL", "a"}, {"ADD", "e"}});
  }
}

TEST_F(DifferentialTest, ReferenceRejectsRepeatedAddWeAreIdempotent) {
  const std::string ours_conf = MakeConf(root_ + "/idem-ours", kSmall);
  const std::string ref_conf = MakeConf(root_ + "/idem-ref", kSmall);
  auto first = Run(Ours(), "ADD", "a", ours_conf);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto again = Run(Ours(), "ADD", "a", ours_conf);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out, first.out);
  ASSERT_EQ(Run(Ref(), "ADD", "a", ref_conf).exit_code, 0);
  auto ref_again = Run(Ref(), "ADD", "a", ref_conf);
  EXPECT_EQ(ref_again.exit_code, 1);
  EXPECT_EQ(ErrorJson(ref_again)["msg"],
            "failed to allocate for range 0: 10.5.0.2 has been allocated to a, duplicate "
            "allocation is not allowed");
  EXPECT_EQ(Snapshot(root_ + "/idem-ours/net1"), Snapshot(root_ + "/idem-ref/net1"));
}

// State written by the reference is reused, checked and released by ours, and the reverse,
// with the calls interleaved so our index has to notice every foreign change.
TEST_F(DifferentialTest, CrossReleaseAndCrossCheck) {
  const std::string body =
      R"("ranges":[[{"subnet":"10.10.0.0/24"}],[{"subnet":"2001:db8:10::/120"}]])";
  const std::string mixed = MakeConf(root_ + "/mixed", body);
  const std::string solo = MakeConf(root_ + "/solo", body);
  // (binary, command, id): the same sequence on a reference-only directory must end equal.
  const std::vector<std::tuple<std::string, std::string, std::string>> seq = {
      {Ref(), "ADD", "r1"},  {Ours(), "ADD", "o1"}, {Ref(), "ADD", "r2"},  {Ours(), "DEL", "r1"},
      {Ref(), "DEL", "o1"},  {Ours(), "ADD", "o2"}, {Ref(), "ADD", "r3"},  {Ours(), "ADD", "o3"},
      {Ours(), "DEL", "r3"}, {Ref(), "DEL", "o2"},  {Ours(), "ADD", "o4"}, {Ref(), "ADD", "r4"}};
  std::map<std::string, std::string> results;
  for (const auto& [bin, cmd, id] : seq) {
    auto out = Run(bin, cmd, id, mixed);
    ASSERT_EQ(out.exit_code, 0) << bin << " " << cmd << " " << id << ": " << out.out;
    auto solo_out = Run(Ref(), cmd, id, solo);
    ASSERT_EQ(solo_out.exit_code, 0);
    EXPECT_EQ(out.out, solo_out.out) << bin << " " << cmd << " " << id;
    if (cmd == "ADD") results[id] = out.out;
  }
  EXPECT_EQ(Snapshot(root_ + "/mixed/net1"), Snapshot(root_ + "/solo/net1"));

  // CHECK each live container with each plugin, prevResult = the ADD result.
  for (const char* id : {"r2", "o3", "o4", "r4"}) {
    auto with_prev = cni::Json::parse(mixed);
    with_prev["prevResult"] = cni::Json::parse(results[id]);
    for (const auto& bin : {Ours(), Ref()}) {
      auto out = Run(bin, "CHECK", id, with_prev.dump());
      EXPECT_EQ(out.exit_code, 0) << bin << " CHECK " << id << ": " << out.out;
    }
  }
  // Ours CHECK compares prevResult's addresses with the reservations.
  auto wrong = cni::Json::parse(mixed);
  wrong["prevResult"] = cni::Json::parse(results["o4"]);
  wrong["prevResult"]["ips"][0]["address"] = "10.10.0.200/24";
  auto bad = Run(Ours(), "CHECK", "o4", wrong.dump());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(ErrorJson(bad)["code"], 103);

  // Everything released by the other plugin leaves no reservation.
  for (const char* id : {"r2", "r4"}) ASSERT_EQ(Run(Ours(), "DEL", id, mixed).exit_code, 0);
  for (const char* id : {"o3", "o4"}) ASSERT_EQ(Run(Ref(), "DEL", id, mixed).exit_code, 0);
  EXPECT_TRUE(Reservations(root_ + "/mixed/net1").empty());
  // And ours still allocates correctly afterwards (its index noticed the reference's DELs).
  auto next = Run(Ours(), "ADD", "n1", mixed);
  auto next_solo = Run(Ref(), "ADD", "n1", solo);
  ASSERT_EQ(next.exit_code, 0);
  EXPECT_EQ(next.out, next_solo.out);
}

// host-local only writes files: neither plugin enters CNI_NETNS (checked with strace).
TEST_F(DifferentialTest, NeitherPluginEntersTheNetns) {
  if (::system("command -v strace >/dev/null 2>&1") != 0) GTEST_SKIP() << "strace not installed";
  const std::string conf = MakeConf(root_ + "/strace", kSmall);
  std::ofstream(root_ + "/conf.json") << conf;
  for (const auto& bin : {Ours(), Ref()}) {
    const std::string cmd =
        "ip netns exec " + ns_->name() +
        " env CNI_COMMAND=ADD CNI_CONTAINERID=s1 CNI_NETNS=" + ns_->path() +
        // LeakSanitizer cannot run under ptrace (sanitizer builds of the plugins).
        " CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni ASAN_OPTIONS=detect_leaks=0"
        " strace -f -e trace=setns,unshare -o " +
        root_ + "/trace.txt " + bin + " < " + root_ + "/conf.json";
    auto res = nodegate::testing::RunCommand(cmd);
    ASSERT_EQ(res.exit_code, 0) << res.output;
    std::ifstream in(root_ + "/trace.txt");
    std::string trace(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(trace.find("setns("), std::string::npos) << bin << "\n" << trace;
    ASSERT_EQ(Run(bin, "DEL", "s1", conf).exit_code, 0);
  }
}

}  // namespace
}  // namespace nodegate::ipam::testing
