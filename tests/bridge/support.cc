#include "tests/bridge/support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

namespace nodegate::bridge::testing {

namespace fs = std::filesystem;
using nodegate::testing::RunCommand;

std::string ModeName(Mode mode) { return mode == Mode::kNft ? "nft" : "legacy"; }

std::string ModeBinDir(Mode mode) {
  static std::mutex mutex;
  static std::set<std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string variant = ModeName(mode);
  const std::string dir =
      "/tmp/ng-bridge-" + variant + "-bin-" + std::to_string(static_cast<long>(::getpid()));
  if (made.insert(dir).second) {
    fs::create_directories(dir);
    for (const char* tool : {"iptables", "ip6tables"}) {
      for (const char* suffix : {"", "-save", "-restore"}) {
        const std::string link = dir + "/" + tool + suffix;
        ::unlink(link.c_str());
        const std::string target = std::string("/usr/sbin/") + tool + "-" + variant + suffix;
        if (::symlink(target.c_str(), link.c_str()) != 0) ADD_FAILURE() << "symlink " << link;
      }
    }
    // Removed when the test process exits.
    static struct Cleanup {
      std::set<std::string>* dirs;
      ~Cleanup() {
        for (const auto& d : *dirs) fs::remove_all(d);
      }
    } cleanup{&made};
  }
  return dir;
}

std::string Ours() { return nodegate::testing::BinPath("bridge"); }
std::string Reference() { return nodegate::testing::ReferencePath("bridge"); }

std::string OurIpamPath() {
  return fs::path(nodegate::testing::BinPath("host-local")).parent_path().string();
}
std::string ReferenceIpamPath() { return "/usr/lib/cni"; }

BridgeNode::BridgeNode(const std::string& label, Mode mode)
    : label_(label), mode_(mode), node_("ngb-" + label) {
  data_dir_ = "/tmp/ng-bridge-ipam-" + node_.name();
  fs::create_directories(data_dir_);
}

BridgeNode::~BridgeNode() {
  containers_.clear();
  std::error_code ec;
  fs::remove_all(data_dir_, ec);
}

const TestNetns& BridgeNode::Container(const std::string& id) {
  auto& slot = containers_[id];
  if (!slot) slot = std::make_unique<TestNetns>("ngbc-" + label_);
  return *slot;
}

void BridgeNode::RemoveContainer(const std::string& id) {
  const std::string name = Container(id).name();
  auto veths = [&] { return nodegate::testing::CountListed(node_, "ip -o link show type veth"); };
  const int before = veths();
  RunCommand("ip netns del " + name);
  removed_.insert(id);
  // The kernel destroys the namespace, and the pair with it, in a work queue of its own:
  // wait for the node's end to go so both sides are compared after it.
  for (int i = 0; i < 100 && before > 0 && veths() >= before; ++i) ::usleep(20000);
}

PluginOutput BridgeNode::Run(const std::string& binary, const std::string& command,
                             const std::string& id, const std::string& conf,
                             const std::string& cni_path, const std::string& ifname,
                             const std::string& cni_args) {
  PluginCall call;
  call.binary = binary;
  call.command = command;
  call.container_id = id;
  call.netns = Container(id).path();
  call.ifname = ifname;
  call.args = cni_args;
  call.path = cni_path;
  call.stdin_data = conf;
  call.run_in_netns = node_.path();
  // Our DEL leaves the deletion of the pair to a detached child (plugins/bridge/links.h): the
  // states are compared once it is done.
  call.wait_for_detached = true;
  call.extra_env = extra_env_;
  const char* path = std::getenv("PATH");
  call.extra_env["PATH"] =
      ModeBinDir(mode_) + ":" + (path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  return nodegate::testing::RunPlugin(call);
}

std::string Normalise(std::string text) {
  static const std::vector<std::pair<std::regex, std::string>> kRules = {
      {std::regex(R"(([0-9a-f]{2}:){5}[0-9a-f]{2})"), "MAC"},
      {std::regex(R"(veth[0-9a-f]{8})"), "VETH"},
      {std::regex(R"(fe80::[0-9a-f:]+)"), "LINKLOCAL"},
      {std::regex(R"(/run/netns/[A-Za-z0-9_.-]+)"), "NETNS"},
      {std::regex(R"(link-netns(id)? \S+)"), "link-netns NS"},
      {std::regex(R"(([a-z_]+_timer|gc_timer) +[0-9.]+)"), "$1 T"},
      {std::regex(R"(\[\d+:\d+\])"), "[C]"},
      {std::regex(R"(in path \[[^\]]*\])"), "in path [CNI_PATH]"},
      {std::regex(R"( tentative| dadfailed)"), ""},
      // ip's complaint about a peer whose namespace is going away (deleted a moment ago).
      {std::regex(R"(Error: Peer netns reference is invalid\.\n)"), ""},
      // Carrier follows the ports (compared themselves), and the kernel updates it late.
      {std::regex(R"(NO-CARRIER,|,LOWER_UP| linkdown| state (UP|DOWN|UNKNOWN))"), ""},
      {std::regex(R"( +valid_lft \S+ preferred_lft \S+)"), " LFT"},
      // Our veth pairs are made with one queue each way, the reference's with one per possible
      // CPU of which one is used (plugins/bridge/README.md: it saves two grace periods).
      {std::regex(R"(numtxqueues \d+ numrxqueues \d+)"), "numtxqueues Q numrxqueues Q"},
      // A bridge's MAC moves when its ports change unless pinned; timers of the ports too.
      {std::regex(R"(8000\.[0-9a-f:]+)"), "8000.MAC"},
  };
  for (const auto& [re, with] : kRules) text = std::regex_replace(text, re, with);
  return text;
}

std::string BridgeNode::NodeState() const {
  const std::string save = std::string(" 2>&1 | grep -v '^#'");
  std::string cmd =
      "echo '## links'; ip -d addr show; echo '## routes'; ip -4 route show table "
      "all; ip -6 route show table all | grep -v '^multicast\\|^local\\|^anycast\\|^fe80'; "
      "echo '## ports'; bridge -d link show; echo '## vlans'; bridge vlan show; "
      "echo '## sysctls'; cd /proc/sys/net && grep -H . ipv4/ip_forward ipv6/conf/all/forwarding "
      "ipv6/conf/*/accept_ra ipv4/conf/*/forwarding 2>/dev/null | grep -v 'conf/default'; "
      "echo '## nat'; " +
      ModeBinDir(mode_) + "/iptables-save -t nat" + save + "; " + ModeBinDir(mode_) +
      "/ip6tables-save -t nat" + save + ";";
  std::string state = Normalise(node_.MustRun(cmd));
  // nftables: the lines with content, normalised, then sorted: nft lists chains in the order
  // they were made, which differs (iptables-save above shows the rules in order). Without the
  // empty nat base chains PREROUTING, INPUT, OUTPUT: our iptables-nft encoding makes a new nat
  // table with all four, as iptables-nft 1.8.4 does (plugins/portmap/iptables/nft/table.cc);
  // 1.8.9 makes each with its first rule.
  std::istringstream nft(Normalise(node_.MustRun("nft list ruleset")));
  std::vector<std::string> lines;
  static const std::regex kSkip(
      R"(^\s*(\}|chain (PREROUTING|INPUT|OUTPUT) \{|type nat hook (prerouting|input|output) .*)?\s*$)");
  for (std::string line; std::getline(nft, line);) {
    if (!std::regex_match(line, kSkip)) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  state += "## nft\n";
  for (const auto& line : lines) state += line + "\n";
  return state;
}

std::string BridgeNode::ContainerState(const std::string& id) {
  const TestNetns& c = Container(id);
  const std::string cmd =
      "echo '## links'; ip -d addr show; echo '## routes'; ip -4 route show table all; "
      "ip -6 route show table all | grep -v '^multicast\\|^local\\|^anycast\\|^fe80'; "
      "echo '## sysctls'; cd /proc/sys/net && for i in ipv4/conf/eth0/arp_notify "
      "ipv6/conf/eth0/accept_dad ipv6/conf/eth0/disable_ipv6 ipv6/conf/lo/disable_ipv6 "
      "ipv6/conf/eth0/keep_addr_on_down; do [ -e $i ] && echo $i=$(cat $i); done; true";
  return Normalise(c.MustRun(cmd));
}

std::string BridgeNode::IpamState() const {
  std::ostringstream out;
  if (!fs::exists(data_dir_)) return "";
  std::vector<std::string> lines;
  for (const auto& e : fs::recursive_directory_iterator(data_dir_)) {
    // Our host-local's index (.nodegate/) is its own: the reference's files are compared.
    if (!e.is_regular_file() || e.path().filename() == "lock" ||
        e.path().string().find("/.nodegate") != std::string::npos) {
      continue;
    }
    std::ifstream in(e.path());
    std::stringstream content;
    content << in.rdbuf();
    lines.push_back(fs::relative(e.path(), data_dir_).string() + ": " + content.str());
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) out << l << "\n";
  return out.str();
}

namespace {

// A link's carrier reaches its bridge port's state and IPv6 (its link-local address) through
// the kernel's linkwatch, a work queue, a moment after the link goes up: the plugin run last
// would be compared unsettled. Reading a link's carrier in sysfs makes the kernel apply its
// pending change first (ip netns exec mounts the namespace's own sysfs).
void SettleCarrier(const TestNetns& ns) {
  RunCommand("ip netns exec " + ns.name() +
             " sh -c 'cat /sys/class/net/*/carrier' >/dev/null 2>&1");
}

}  // namespace

std::string BridgeNode::State(const std::vector<std::string>& containers) {
  SettleCarrier(node_);
  for (const auto& id : containers) {
    if (removed_.count(id) == 0) SettleCarrier(Container(id));
  }
  std::string s = "# node\n" + NodeState() + "# ipam\n" + IpamState();
  for (const auto& id : containers) {
    if (removed_.count(id) != 0) continue;
    s += "# container " + id + "\n" + ContainerState(id);
  }
  return s;
}

std::string BridgeConf(const std::string& version, const std::string& extra,
                       const std::string& data_dir, const std::string& ipam_ranges,
                       const std::string& ipam_extra) {
  std::string conf = R"({"cniVersion":")" + version + R"(","name":"net1","type":"bridge")" + extra;
  if (!ipam_ranges.empty()) {
    conf += R"(,"ipam":{"type":"host-local","dataDir":")" + data_dir + R"(","ranges":)" +
            ipam_ranges + ipam_extra + "}";
  }
  return conf + "}";
}

std::string WithPrevResult(const std::string& conf, const std::string& result) {
  auto j = nlohmann::json::parse(conf);
  j["prevResult"] = nlohmann::json::parse(result);
  return j.dump();
}

std::string ErrorMessage(const PluginOutput& out) {
  auto j = nlohmann::json::parse(out.out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  return Normalise(j.value("msg", ""));
}

std::string LineDiff(const std::string& ours, const std::string& ref) {
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const auto a = lines(ours), b = lines(ref);
  // Longest common subsequence, then the lines outside it (the states are a few hundred lines).
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i, ++j;
    } else if (j == b.size() || (i < a.size() && lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "ours: " + a[i++] + "\n";
    } else {
      out += "ref:  " + b[j++] + "\n";
    }
  }
  return out;
}

bool Succeeds(const PluginOutput& out) {
  EXPECT_EQ(out.exit_code, 0) << out.out << out.err;
  return out.exit_code == 0;
}

}  // namespace nodegate::bridge::testing
