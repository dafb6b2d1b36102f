// Pod names from the runtime's libcni cache files.

#include "lib/cni/cache_pods.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace nodegate::cni {
namespace {

constexpr char kContainerdEntry[] =
    R"({"kind":"cniCacheV1","containerId":"abc","config":"e30=","ifName":"eth0",)"
    R"("networkName":"cbr0","cniArgs":[["K8S_POD_INFRA_CONTAINER_ID","abc"],)"
    R"(["K8S_POD_NAMESPACE","kube-system"],["K8S_POD_NAME","coredns-1"],)"
    R"(["K8S_POD_UID","u"]],"result":{}})";

TEST(PodOfCacheEntry, KubeletPod) {
  const auto pod = PodOfCacheEntry(kContainerdEntry);
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(pod->container_id, "abc");
  EXPECT_EQ(pod->network, "cbr0");
  EXPECT_EQ(pod->pod, "kube-system/coredns-1");
}

TEST(PodOfCacheEntry, NotAPod) {
  // podman without a pod: no K8S_ arguments.
  EXPECT_EQ(PodOfCacheEntry(R"({"containerId":"abc","cniArgs":[["IgnoreUnknown","1"]]})"),
            std::nullopt);
  EXPECT_EQ(PodOfCacheEntry(R"({"containerId":"abc"})"), std::nullopt);
  EXPECT_EQ(PodOfCacheEntry(R"({"cniArgs":[["K8S_POD_NAMESPACE","a"],["K8S_POD_NAME","b"]]})"),
            std::nullopt);
  EXPECT_EQ(PodOfCacheEntry(R"({"containerId":"abc","cniArgs":[["K8S_POD_NAMESPACE",1]]})"),
            std::nullopt);
  EXPECT_EQ(PodOfCacheEntry("not json"), std::nullopt);
  EXPECT_EQ(PodOfCacheEntry("[]"), std::nullopt);
}

// The entry is read as a whole document would be, without building one.
TEST(PodOfCacheEntry, ReadAsTheDocumentWouldBe) {
  const std::string args = R"([["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]])";
  const auto pod = [](const std::string& text) {
    const auto found = PodOfCacheEntry(text);
    return found ? found->container_id + " " + found->pod : std::string("none");
  };
  // Members in any order; the same names nested deeper are not the entry's.
  EXPECT_EQ(pod(R"({"cniArgs":)" + args +
                R"(,"result":{"containerId":"x","cniArgs":[]},)"
                R"("containerId":"abc"})"),
            "abc ns/p");
  // A member given twice counts as its last value.
  EXPECT_EQ(pod(R"({"containerId":"old","cniArgs":[],"containerId":"abc","cniArgs":)" + args + "}"),
            "abc ns/p");
  EXPECT_EQ(pod(R"({"containerId":"abc","cniArgs":)" + args + R"(,"cniArgs":{}})"), "none");
  EXPECT_EQ(pod(R"({"containerId":"abc","containerId":7,"cniArgs":)" + args + "}"), "none");
  // Only [string, string] elements are arguments; others are passed over.
  EXPECT_EQ(pod(R"({"containerId":"abc","cniArgs":[["K8S_POD_NAMESPACE","ns","extra"],)"
                R"(["K8S_POD_NAMESPACE",["n"]],"K8S_POD_NAME",{"a":1},)"
                R"(["K8S_POD_NAMESPACE","ns2"],["K8S_POD_NAME","p2"]]})"),
            "abc ns2/p2");
  // Not one JSON document: nothing.
  EXPECT_EQ(pod(R"({"containerId":"abc","cniArgs":)" + args + "} trailing"), "none");
  EXPECT_EQ(pod(R"({"containerId":"abc","cniArgs":)" + args), "none");
  EXPECT_EQ(pod(R"({"containerId":"","cniArgs":)" + args + "}"), "none");
}

TEST(PodsByContainerId, ReadsAFolderAndSkipsWhatItCannotUse) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ports-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "subdir");
  std::ofstream(dir / "cbr0-abc-eth0") << kContainerdEntry;
  std::ofstream(dir / "garbage") << "{";
  const auto pods = PodsByContainerId(dir.string());
  fs::remove_all(dir);
  EXPECT_EQ(pods, (std::map<std::string, std::string>{{"abc", "kube-system/coredns-1"}}));
  EXPECT_TRUE(PodsByContainerId((dir / "missing").string()).empty());
}

// Hostile entries in the folder: a FIFO nobody writes (reading it must not block), a symlink to
// a valid entry elsewhere (not followed), and a file over the cap (16 MiB).
TEST(PodsByContainerId, SkipsFifosSymlinksAndOversizedFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ports-hostile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  std::ofstream(dir / "outside") << kContainerdEntry;
  ASSERT_EQ(::mkfifo((dir / "cache" / "cbr0-fifo-eth0").c_str(), 0600), 0);
  fs::create_symlink(dir / "outside", dir / "cache" / "cbr0-link-eth0");
  {
    std::ofstream big(dir / "cache" / "cbr0-big-eth0");
    big << kContainerdEntry;
    big << std::string((16 << 20) + 1, ' ');
  }
  const auto pods = PodsByContainerId((dir / "cache").string());
  fs::remove_all(dir);
  EXPECT_TRUE(pods.empty());
}

TEST(PodsByContainerId, TheCachesRootMeansItsResultsFolder) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ports-root-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "results");
  std::ofstream(root / "results" / "cbr0-abc-eth0") << kContainerdEntry;
  const auto from_root = PodsByContainerId(root.string());
  const auto from_results = PodsByContainerId((root / "results").string());
  fs::remove_all(root);
  const std::map<std::string, std::string> want{{"abc", "kube-system/coredns-1"}};
  EXPECT_EQ(from_root, want);
  EXPECT_EQ(from_results, want);
}

// portmap's question: the pod of one container of one network, the entry deciding where the
// file name is ambiguous.
TEST(PodOfContainer, ByNetworkAndContainer) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "cache-pods-of-container";
  fs::remove_all(dir);
  fs::create_directories(dir / "results");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / "results" / name) << text;
  };
  write("cbr0-abc-eth0", kContainerdEntry);
  // Container "abc-abc" of "cbr0": its file name also reads as container "abc" of a network
  // "cbr0-abc", and begins as container "abc" of "cbr0" does.
  write("cbr0-abc-abc-eth0", R"({"containerId":"abc-abc","networkName":"cbr0","cniArgs":)"
                             R"([["K8S_POD_NAMESPACE","other"],["K8S_POD_NAME","x"]]})");
  EXPECT_EQ(PodOfContainer(dir.string(), "cbr0", "abc"), "kube-system/coredns-1");
  EXPECT_EQ(PodOfContainer((dir / "results").string(), "", "abc"), "kube-system/coredns-1");
  EXPECT_EQ(PodOfContainer(dir.string(), "cbr0", "abc-abc"), "other/x");
  EXPECT_EQ(PodOfContainer(dir.string(), "cbr0-abc", "abc"), std::nullopt);
  EXPECT_EQ(PodOfContainer(dir.string(), "other", "abc"), std::nullopt);
  EXPECT_EQ(PodOfContainer(dir.string(), "cbr0", "def"), std::nullopt);
  EXPECT_EQ(PodOfContainer((dir / "missing").string(), "cbr0", "abc"), std::nullopt);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nodegate::cni
