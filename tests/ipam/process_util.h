#pragma once
// Shared helpers of the process-level host-local tests: a throwaway network namespace in
// which every plugin process runs (host-local never enters CNI_NETNS, but no plugin is ever
// run in the machine's own namespace), temp data directories, config builders and directory
// snapshots in the reference's terms (name -> content, our .nodegate index left out).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "lib/cni/types.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::ipam::testing {

namespace fs = std::filesystem;
using nodegate::testing::BinPath;
using nodegate::testing::PluginCall;
using nodegate::testing::PluginOutput;
using nodegate::testing::ReferencePath;
using nodegate::testing::RunPlugin;
using nodegate::testing::TestNetns;

inline std::string Ours() { return BinPath("host-local"); }
inline std::string Ref() { return ReferencePath("host-local"); }

// A config: the top level with name/cniVersion plus extra keys, and an ipam object whose
// "dataDir" is set to data_dir.
inline std::string MakeConf(const std::string& data_dir, const std::string& ipam_body,
                            const std::string& version = "1.0.0", const std::string& extra = "",
                            const std::string& name = "net1") {
  return R"({"cniVersion":")" + version + R"(","name":")" + name + R"(","type":"host-local",)" +
         extra + R"("ipam":{"type":"host-local","dataDir":")" + data_dir + R"(",)" + ipam_body +
         "}}";
}

class IpamProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NG_REQUIRE_ROOT();
    ns_ = std::make_unique<TestNetns>("ng-ipam");
    char tmpl[] = "/tmp/ng-ipam-proc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
    ns_.reset();
  }

  PluginOutput Run(const std::string& bin, const std::string& command, const std::string& id,
                   const std::string& conf, const std::string& args = "",
                   const std::string& ifname = "eth0") {
    PluginCall call;
    call.binary = bin;
    call.command = command;
    call.container_id = id;
    call.netns = command == "DEL" ? "" : ns_->path();
    call.ifname = ifname;
    call.args = args;
    call.stdin_data = conf;
    call.run_in_netns = ns_->path();
    return RunPlugin(call);
  }

  // name -> content of the network directory, without our index; a symlink or folder is
  // named by its kind (and target) instead.
  static std::map<std::string, std::string> Snapshot(const std::string& dir) {
    std::map<std::string, std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename();
      if (name == ".nodegate") continue;
      if (e.is_symlink()) {
        out[name] = "<symlink to " + fs::read_symlink(e.path()).string() + ">";
        continue;
      }
      if (e.is_directory()) {
        out[name] = "<folder>";
        continue;
      }
      std::ifstream in(e.path(), std::ios::binary);
      out[name] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  }

  // Only the reservation files (names that are addresses).
  static std::map<std::string, std::string> Reservations(const std::string& dir) {
    auto all = Snapshot(dir);
    std::map<std::string, std::string> out;
    for (auto& [k, v] : all) {
      if (k != "lock" && k.rfind("last_reserved_ip.", 0) != 0) out[k] = v;
    }
    return out;
  }

  static cni::Json ErrorJson(const PluginOutput& out) {
    return cni::Json::parse(out.out, nullptr, false);
  }

  std::unique_ptr<TestNetns> ns_;
  std::string root_;
};

}  // namespace nodegate::ipam::testing
