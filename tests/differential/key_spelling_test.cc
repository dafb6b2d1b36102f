// Key spelling, differential against Debian's reference plugins (v1.1.1). The reference decodes
// its config with Go's encoding/json, which matches struct keys ignoring case: containerd sends
// runtimeConfig.portMappings as {"HostPort", "ContainerPort", ...} and bandwidth as
// {"IngressRate", ...}. For every key each reference plugin reads (stdin config, capability
// objects, prevResult, IPAM ranges, args), this test respells that one key in lower case, as
// a Go field name and in mixed case, runs ours on each spelling, and requires:
//   - each plugin's outcome (exit code, result or error, kernel state or IPAM files) is the one
//     it gives for the canonical spelling;
//   - ours and the reference leave the same kernel state (and exit codes) for the canonical
//     and the Go spelling (the reference runs only on those two: its calls cost most);
//   - removing the key changes our outcome, so the key is really read (no vacuous case).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>

#include "lib/cni/types.h"
#include "tests/bandwidth/support.h"
#include "tests/portmap/harness.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::testing {
namespace {

namespace fs = std::filesystem;
using cni::Json;
using Path = std::vector<std::string>;  // object keys from the root; "*" is every list element

// What one plugin call left: its exit code, what it printed, and the state it changed.
struct Outcome {
  int exit_code = -1;
  std::string printed;  // the result, or the error's code and msg
  std::string state;    // kernel state or IPAM files after ADD
  std::string Full() const {
    return "exit " + std::to_string(exit_code) + "\n" + printed + "\n--- state\n" + state;
  }
};

Outcome FromOutput(const PluginOutput& out, std::string state) {
  // A new device's MAC address is random.
  static const std::regex kMac("([0-9a-f]{2}:){5}[0-9a-f]{2}");
  Outcome o{out.exit_code, std::regex_replace(out.out, kMac, "MAC"), std::move(state)};
  if (out.exit_code != 0) {
    const Json error = Json::parse(out.out, nullptr, false);
    o.printed = error.is_object() ? error.value("msg", std::string("?")) : out.out + out.err;
  }
  return o;
}

// Applies `edit` to the object(s) that hold the last key of `path`.
void AtParent(Json& node, const Path& path, size_t depth,
              const std::function<void(Json&, const std::string&)>& edit) {
  const std::string& key = path[depth];
  if (key == "*") {
    if (!node.is_array()) return;
    for (Json& item : node) AtParent(item, path, depth + 1, edit);
    return;
  }
  if (!node.is_object() || !node.contains(key)) return;
  if (depth + 1 == path.size()) {
    edit(node, key);
  } else {
    AtParent(node[key], path, depth + 1, edit);
  }
}

Json Respelled(Json conf, const Path& path, const std::string& spelling) {
  AtParent(conf, path, 0, [&](Json& parent, const std::string& key) {
    Json value = parent[key];
    parent.erase(key);
    parent[spelling] = std::move(value);
  });
  return conf;
}

Json Without(Json conf, const Path& path) {
  AtParent(conf, path, 0, [](Json& parent, const std::string& key) { parent.erase(key); });
  return conf;
}

// "hostPort" -> "hostport", "HostPort", "hOsTpOrT".
std::vector<std::string> Spellings(const std::string& key) {
  std::string lower = key, go = key, mixed = key;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  go[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(go[0])));
  for (size_t i = 0; i < mixed.size(); ++i) {
    const auto c = static_cast<unsigned char>(mixed[i]);
    mixed[i] = static_cast<char>(i % 2 ? std::toupper(c) : std::tolower(c));
  }
  std::vector<std::string> out;
  for (const std::string& s : {lower, go, mixed}) {
    if (s != key && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

bool IsGoFieldName(const std::string& spelling, const std::string& key) {
  return !key.empty() && spelling.size() == key.size() && spelling.substr(1) == key.substr(1) &&
         spelling[0] == static_cast<char>(std::toupper(static_cast<unsigned char>(key[0])));
}

std::string Describe(const Path& path) {
  std::string out;
  for (const std::string& key : path) out += (out.empty() ? "" : ".") + key;
  return out;
}

struct KeyCase {
  Path path;
  Json conf;              // a config in which this key changes the outcome
  bool removable = true;  // false: the key is also in the default (removing it changes nothing)
};

using Runner = std::function<Outcome(const Json& conf)>;

// `run`, called once per distinct config: most keys share one base config, whose canonical
// outcome is the same for all of them (each run starts from the same state).
Runner Memoized(const Runner& run) {
  auto seen = std::make_shared<std::map<std::string, Outcome>>();
  return [run, seen](const Json& conf) {
    const std::string text = conf.dump();
    auto it = seen->find(text);
    if (it == seen->end()) it = seen->emplace(text, run(conf)).first;
    return it->second;
  };
}

// The comparison every plugin goes through.
void CheckEveryKey(const Runner& ours, const Runner& reference, const std::vector<KeyCase>& cases) {
  const Runner ours_once = Memoized(ours), reference_once = Memoized(reference);
  for (const KeyCase& c : cases) {
    const std::string key = c.path.back();
    SCOPED_TRACE(Describe(c.path));
    const Outcome ours_canonical = ours_once(c.conf);
    const Outcome ref_canonical = reference_once(c.conf);
    EXPECT_EQ(ours_canonical.exit_code, ref_canonical.exit_code)
        << ours_canonical.Full() << "\nreference:\n"
        << ref_canonical.Full();
    EXPECT_EQ(ours_canonical.state, ref_canonical.state);
    if (c.removable) {
      EXPECT_NE(ours(Without(c.conf, c.path)).Full(), ours_canonical.Full())
          << "the key changes nothing here, so its spelling is not tested";
    }
    for (const std::string& spelling : Spellings(key)) {
      SCOPED_TRACE("spelled " + spelling);
      const Json conf = Respelled(c.conf, c.path, spelling);
      const Outcome got = ours(conf);
      EXPECT_EQ(got.Full(), ours_canonical.Full());
      // The reference (its calls are most of this test's time) on the Go field name, the
      // spelling containerd sends; that Go matches the others too is encoding/json's rule.
      if (IsGoFieldName(spelling, key)) {
        const Outcome ref = reference(conf);
        EXPECT_EQ(ref.Full(), ref_canonical.Full()) << "the reference reads " << spelling;
        EXPECT_EQ(got.state, ref.state);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// portmap: the iptables layout in the node's default mode (iptables-nft here), for both.

Json PortmapBase() {
  // A host-side address listed first, so the prevResult's interface/sandbox/name keys decide
  // which address is the container's.
  return Json::parse(R"({
    "cniVersion": "1.0.0", "name": "keynet", "type": "portmap",
    "runtimeConfig": {"portMappings": [
      {"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "10.88.0.1"},
      {"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]},
    "prevResult": {"cniVersion": "1.0.0",
      "interfaces": [{"name": "hv0"}, {"name": "eth0", "sandbox": "/run/netns/ctr"}],
      "ips": [{"interface": 0, "address": "10.88.0.1/16"},
              {"interface": 1, "address": "10.88.0.2/16"},
              {"interface": 1, "address": "fd00:88::2/64"}]}})");
}

Json With(Json conf, const std::string& key, Json value) {
  conf[key] = std::move(value);
  return conf;
}

TEST(KeySpelling, PortmapReadsEveryKeyInAnyCase) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  // One restore per family (one command for both): table nat replaced by just the
  // KUBE-MARK-MASQ chain.
  auto ResetNat = [&] {
    const std::string table = "printf '*nat\\n:KUBE-MARK-MASQ - [0:0]\\nCOMMIT\\n' | ";
    topo.node.MustRun(table + portmap::testing::IptablesTool(false) + "-restore && " + table +
                      portmap::testing::IptablesTool(true) + "-restore");
  };
  ResetNat();
  auto runner = [&](bool reference) -> Runner {
    return [&, reference](const Json& conf) {
      const auto add =
          portmap::testing::Portmap(topo.node, "ADD", "keyctr", conf.dump(), reference);
      const std::string state = portmap::testing::SaveNatBothFamilies(topo.node);
      const auto del =
          portmap::testing::Portmap(topo.node, "DEL", "keyctr", conf.dump(), reference);
      // The shared chains stay (both plugins keep them); the container's rules must go.
      const std::string left = portmap::testing::SaveNatBothFamilies(topo.node);
      EXPECT_EQ(portmap::testing::CountLines(left, "CNI-DN-"), 0)
          << (reference ? "reference" : "ours") << " DEL left rules; DEL said " << del.out;
      ResetNat();  // the next run starts from the same tables
      return FromOutput(add, state);
    };
  };
  const Json base = PortmapBase();
  std::vector<KeyCase> cases = {
      {{"name"}, base},
      {{"snat"}, With(base, "snat", false)},
      {{"markMasqBit"}, With(base, "markMasqBit", 5)},
      {{"externalSetMarkChain"}, With(base, "externalSetMarkChain", "KUBE-MARK-MASQ")},
      {{"conditionsV4"}, With(base, "conditionsV4", Json::parse(R"(["-s", "198.51.100.0/24"])"))},
      {{"conditionsV6"}, With(base, "conditionsV6", Json::parse(R"(["-s", "2001:db8:51::/64"])"))},
      {{"runtimeConfig"}, base},
      {{"runtimeConfig", "portMappings"}, base},
      {{"runtimeConfig", "portMappings", "*", "hostPort"}, base},
      {{"runtimeConfig", "portMappings", "*", "containerPort"}, base},
      {{"runtimeConfig", "portMappings", "*", "protocol"}, base},
      {{"runtimeConfig", "portMappings", "*", "hostIP"}, base},
      {{"prevResult"}, base},
      {{"prevResult", "cniVersion"}, base, /*removable=*/false},
      {{"prevResult", "ips"}, base},
      {{"prevResult", "ips", "*", "address"}, base},
      {{"prevResult", "ips", "*", "interface"}, base},
      {{"prevResult", "interfaces"}, base},
      {{"prevResult", "interfaces", "*", "name"}, base},
      {{"prevResult", "interfaces", "*", "sandbox"}, base},
  };
  CheckEveryKey(runner(false), runner(true), cases);
}

// ---------------------------------------------------------------------------------------------
// bandwidth: qdiscs on the host veth and the ifb.

TEST(KeySpelling, BandwidthReadsEveryKeyInAnyCase) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const Json base = Json::parse(bandwidth::testing::BandwidthConf(topo, R"("x": 0)"));
  auto runner = [&](const std::string& binary) -> Runner {
    return [&, binary](const Json& conf) {
      const auto add = bandwidth::testing::Invoke(binary, "ADD", topo, conf.dump());
      const std::string state = bandwidth::testing::QdiscShow(topo.node, topo.host_veth) +
                                bandwidth::testing::SettledIfbNames(topo.node);
      const auto del = bandwidth::testing::Invoke(binary, "DEL", topo, conf.dump());
      EXPECT_EQ(bandwidth::testing::SettledIfbNames(topo.node), "") << "DEL said " << del.out;
      // The reference leaves the host veth's qdiscs to the veth's deletion; ours removes them.
      if (binary == bandwidth::testing::Ours()) {
        EXPECT_EQ(bandwidth::testing::QdiscShow(topo.node, topo.host_veth).find("tbf"),
                  std::string::npos)
            << "DEL left a qdisc; DEL said " << del.out;
      }
      // The next run starts from a bare veth, whatever this one left.
      topo.node.Run("tc qdisc del dev " + topo.host_veth + " root; tc qdisc del dev " +
                    topo.host_veth + " ingress");
      return FromOutput(add, state);
    };
  };
  const Json rates = Json::parse(
      R"({"ingressRate": 8000000, "ingressBurst": 800000, "egressRate": 4000000,
          "egressBurst": 400000})");
  Json top = base, capability = base;
  for (const auto& [k, v] : rates.items()) top[k] = v;
  capability["runtimeConfig"] = {{"bandwidth", rates}};
  std::vector<KeyCase> cases;
  for (const auto& [k, v] : rates.items()) {
    cases.push_back({{k}, top});
    cases.push_back({{"runtimeConfig", "bandwidth", k}, capability});
  }
  cases.push_back({{"runtimeConfig"}, capability});
  cases.push_back({{"runtimeConfig", "bandwidth"}, capability});
  cases.push_back({{"prevResult", "interfaces"}, capability});
  cases.push_back({{"prevResult", "interfaces", "*", "name"}, capability});
  cases.push_back({{"prevResult", "interfaces", "*", "sandbox"}, capability});
  CheckEveryKey(runner(bandwidth::testing::Ours()), runner(bandwidth::testing::Reference()), cases);
}

// ---------------------------------------------------------------------------------------------
// host-local: the result and the files of a fresh data directory.

class HostLocalKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    NG_REQUIRE_ROOT();
    char tmpl[] = "/tmp/ng-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    std::ofstream(root_ + "/resolv.conf") << "nameserver 192.0.2.53\nsearch keys.test\n";
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
    fs::remove_all(kDefaultStore);
  }

  // Where a plugin that missed "dataDir" keeps this network's reservations.
  static constexpr const char* kDefaultStore = "/var/lib/cni/networks/keynet-hl";

  Runner Make(const std::string& binary) {
    return [this, binary](const Json& conf) {
      const std::string dir = root_ + "/run" + std::to_string(++runs_);
      std::string text = conf.dump();
      for (size_t at; (at = text.find("@DIR@")) != std::string::npos;) text.replace(at, 5, dir);
      fs::remove_all(kDefaultStore);
      PluginCall call{.binary = binary,
                      .command = "ADD",
                      .container_id = "keyctr",
                      .netns = "/run/netns/none",
                      .ifname = "eth0",
                      .stdin_data = text};
      const PluginOutput add = RunPlugin(call);
      std::string files;
      for (const char* network_dir : {"/keynet-hl", ""}) {
        const std::string d = dir + network_dir;
        if (!fs::exists(d)) continue;
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(d)) {
          if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
            names.push_back(e.path().filename());
          }
        }
        std::sort(names.begin(), names.end());
        for (const auto& n : names) {
          std::ifstream in(d + "/" + n);
          files += n + ": " + std::string(std::istreambuf_iterator<char>(in), {}) + "\n";
        }
      }
      if (fs::exists(kDefaultStore)) files += "(the default store was used)\n";
      call.command = "DEL";
      call.netns = "";
      RunPlugin(call);
      return FromOutput(add, files);
    };
  }

  std::string root_;
  int runs_ = 0;
};

TEST_F(HostLocalKeys, HostLocalReadsEveryKeyInAnyCase) {
  const std::string resolv = root_ + "/resolv.conf";
  const Json ranged = Json::parse(R"({"cniVersion": "1.0.0", "name": "keynet-hl", "type": "bridge",
    "ipam": {"type": "host-local", "dataDir": "@DIR@", "resolvConf": ")" +
                                  resolv + R"(",
      "routes": [{"dst": "198.51.100.0/24", "gw": "10.5.0.1"}],
      "ranges": [[{"subnet": "10.5.0.0/24", "rangeStart": "10.5.0.10", "rangeEnd": "10.5.0.20",
                   "gateway": "10.5.0.2"}]]}})");
  Json legacy = ranged;
  legacy["ipam"].erase("ranges");
  legacy["ipam"].update(Json::parse(
      R"({"subnet": "10.6.0.0/24", "rangeStart": "10.6.0.10", "rangeEnd": "10.6.0.20",
          "gateway": "10.6.0.2"})"));
  Json runtime_ranges = ranged;
  runtime_ranges["runtimeConfig"] = Json::parse(
      R"({"ipRanges": [[{"subnet": "10.7.0.0/24", "rangeStart": "10.7.0.30",
                         "rangeEnd": "10.7.0.40", "gateway": "10.7.0.3"}]]})");
  // rangeEnd only shows when an address past it is asked for: refused within the range,
  // allocated without it.
  auto past_end = [](Json conf, const char* ip) {
    conf["runtimeConfig"]["ips"] = Json::array({ip});
    return conf;
  };
  Json runtime_ips = ranged;
  runtime_ips["runtimeConfig"] = Json::parse(R"({"ips": ["10.5.0.15"]})");
  Json args_ips = ranged;
  args_ips["args"] = Json::parse(R"({"cni": {"ips": ["10.5.0.17"]}})");
  Json v040 = ranged;
  v040["cniVersion"] = "0.4.0";

  std::vector<KeyCase> cases = {
      {{"name"}, ranged},
      {{"cniVersion"}, v040},
      {{"ipam"}, ranged},
      {{"ipam", "dataDir"}, ranged},
      {{"ipam", "resolvConf"}, ranged},
      {{"ipam", "routes"}, ranged},
      {{"ipam", "routes", "*", "dst"}, ranged},
      {{"ipam", "routes", "*", "gw"}, ranged},
      {{"ipam", "ranges"}, ranged},
      {{"ipam", "ranges", "*", "*", "subnet"}, ranged},
      {{"ipam", "ranges", "*", "*", "rangeStart"}, ranged},
      {{"ipam", "ranges", "*", "*", "rangeEnd"}, past_end(ranged, "10.5.0.25")},
      {{"ipam", "ranges", "*", "*", "gateway"}, ranged},
      {{"ipam", "subnet"}, legacy},
      {{"ipam", "rangeStart"}, legacy},
      {{"ipam", "rangeEnd"}, past_end(legacy, "10.6.0.25")},
      {{"ipam", "gateway"}, legacy},
      {{"runtimeConfig"}, runtime_ranges},
      {{"runtimeConfig", "ipRanges"}, runtime_ranges},
      {{"runtimeConfig", "ipRanges", "*", "*", "subnet"}, runtime_ranges},
      {{"runtimeConfig", "ipRanges", "*", "*", "rangeStart"}, runtime_ranges},
      {{"runtimeConfig", "ipRanges", "*", "*", "rangeEnd"}, past_end(runtime_ranges, "10.7.0.45")},
      {{"runtimeConfig", "ipRanges", "*", "*", "gateway"}, runtime_ranges},
      {{"runtimeConfig", "ips"}, runtime_ips},
      {{"args"}, args_ips},
      {{"args", "cni"}, args_ips},
      {{"args", "cni", "ips"}, args_ips},
  };
  CheckEveryKey(Make(BinPath("host-local")), Make(ReferencePath("host-local")), cases);
}

}  // namespace
}  // namespace nodegate::testing
