// Container IDs from /proc/PID/cgroup texts, and socket owners from a fake /proc tree.

#include "ports/process.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace nodegate::ports {
namespace {

const std::string kId(64, 'a');

TEST(ContainerIdFromCgroup, RuntimeScopes) {
  for (const std::string prefix : {"cri-containerd-", "libpod-", "docker-", "crio-"}) {
    EXPECT_EQ(ContainerIdFromCgroup("0::/kubepods.slice/kubepods-besteffort.slice/"
                                    "kubepods-besteffort-pod12.slice/" +
                                    prefix + kId + ".scope\n"),
              kId)
        << prefix;
  }
}

TEST(ContainerIdFromCgroup, CgroupfsPaths) {
  EXPECT_EQ(ContainerIdFromCgroup("12:pids:/docker/" + kId + "\n11:cpu:/docker/" + kId + "\n"),
            kId);
  EXPECT_EQ(ContainerIdFromCgroup("0::/kubepods/besteffort/pod1234/" + kId + "\n"), kId);
}

TEST(ContainerIdFromCgroup, NotAContainer) {
  EXPECT_EQ(ContainerIdFromCgroup("0::/user.slice/user-0.slice/session-1.scope\n"), std::nullopt);
  EXPECT_EQ(ContainerIdFromCgroup("0::/machine.slice/libpod-conmon-" + kId + ".scope\n"),
            std::nullopt);
  EXPECT_EQ(ContainerIdFromCgroup("0::/docker/" + kId.substr(1) + "\n"), std::nullopt);
  EXPECT_EQ(ContainerIdFromCgroup("0::/docker/" + std::string(64, 'A') + "\n"), std::nullopt);
  EXPECT_EQ(ContainerIdFromCgroup(""), std::nullopt);
}

// A fake /proc: /proc/<pid>/fd/<n> are symlinks with the kernel's link texts.
TEST(SocketOwners, FindsEveryProcessHoldingTheSocket) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ports-proc-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto make_process = [&](int pid, const std::string& comm, const std::string& cgroup,
                          std::vector<std::string> links) {
    const fs::path dir = root / std::to_string(pid);
    fs::create_directories(dir / "fd");
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cgroup") << cgroup;
    for (size_t i = 0; i < links.size(); ++i) {
      fs::create_symlink(links[i], dir / "fd" / std::to_string(i));
    }
  };
  make_process(10, "python3", "0::/user.slice\n", {"/dev/null", "socket:[777]"});
  make_process(11, "nginx", "0::/system.slice/cri-containerd-" + kId + ".scope\n",
               {"socket:[777]", "socket:[888]", "pipe:[5]"});
  make_process(12, "other", "0::/\n", {"socket:[999]"});
  fs::create_directories(root / "self");  // not a pid

  const auto owners = SocketOwners({777, 888}, root.string());
  fs::remove_all(root);
  ASSERT_EQ(owners.size(), 2u);
  ASSERT_EQ(owners.at(777).size(), 2u);
  std::vector<int> pids = {owners.at(777)[0].pid, owners.at(777)[1].pid};
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<int>{10, 11}));
  ASSERT_EQ(owners.at(888).size(), 1u);
  EXPECT_EQ(owners.at(888)[0].command, "nginx");
  EXPECT_EQ(owners.at(888)[0].container, kId);
}

}  // namespace
}  // namespace nodegate::ports
