// Sibling plugins: which files are this build's plugin of a type (ELF notes: this test's own
// binary carries one, as a plugin's does; hand-made files cover the rest), and DelegateCall
// running a linked sibling in-process where it would have exec'd it, with the same outcome.
#include "lib/cni/sibling.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "lib/cni/delegate.h"
#include "lib/cni/skel.h"
#include "lib/cni/version.h"
#include "lib/net/ip.h"

NODEGATE_PLUGIN_NOTE("sibling-test");

namespace nodegate::cni {
namespace {

namespace fs = std::filesystem;

constexpr unsigned char kOwnClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;

std::string SelfExe() { return fs::read_symlink("/proc/self/exe").string(); }

// An ELF header of this machine, one PT_NOTE program header and the note segment at
// `note_offset` (the rest zeros), as a linker lays them out.
std::string MakeElf(const std::vector<char>& notes, size_t note_offset = 0x200,
                    unsigned char elf_class = kOwnClass) {
  ElfW(Ehdr) ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = elf_class;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_EXEC;
#if defined(__x86_64__)
  ehdr.e_machine = EM_X86_64;
#elif defined(__aarch64__)
  ehdr.e_machine = EM_AARCH64;
#endif
  ehdr.e_phoff = sizeof(ehdr);
  ehdr.e_phentsize = sizeof(ElfW(Phdr));
  ehdr.e_phnum = 1;
  ElfW(Phdr) phdr{};
  phdr.p_type = PT_NOTE;
  phdr.p_offset = note_offset;
  phdr.p_filesz = notes.size();
  phdr.p_align = 4;
  std::string file(note_offset + notes.size(), '\0');
  std::memcpy(file.data(), &ehdr, sizeof(ehdr));
  std::memcpy(file.data() + sizeof(ehdr), &phdr, sizeof(phdr));
  std::memcpy(file.data() + note_offset, notes.data(), notes.size());
  return file;
}

// One note: header, owner and text each padded to 4 bytes.
std::vector<char> Note(const std::string& owner_with_nul, uint32_t type, const std::string& text) {
  std::vector<char> out;
  auto put32 = [&](uint32_t v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + 4);
  };
  auto put_padded = [&](const std::string& s) {
    out.insert(out.end(), s.begin(), s.end());
    while (out.size() % 4 != 0) out.push_back('\0');
  };
  put32(static_cast<uint32_t>(owner_with_nul.size()));
  put32(static_cast<uint32_t>(text.size()));
  put32(type);
  put_padded(owner_with_nul);
  put_padded(text);
  return out;
}

std::string NoteText(const std::string& type, std::string_view token) {
  return type + '\0' + std::string(token) + '\0';
}

const std::string kOwner = std::string("nodegate") + '\0';

class SiblingFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sibling_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  fs::path dir_;
};

TEST_F(SiblingFileTest, ThisBuildsBinaryIsItsOwnType) {
  // This test's executable carries NODEGATE_PLUGIN_NOTE("sibling-test"), as a plugin's main.cc
  // does: the compiler and linker put it where IsSiblingBinary reads.
  ASSERT_FALSE(kBuildToken.empty()) << "a build from a git tree has a token";
  EXPECT_TRUE(IsSiblingBinary(SelfExe(), "sibling-test"));
  EXPECT_FALSE(IsSiblingBinary(SelfExe(), "host-local"));
  EXPECT_FALSE(IsSiblingBinary(SelfExe(), "sibling-tes"));
}

TEST_F(SiblingFileTest, NoteWithThisTokenAnswersTrue) {
  const auto path =
      Write("a", MakeElf(Note(kOwner, kPluginNoteType, NoteText("host-local", kBuildToken))));
  EXPECT_TRUE(IsSiblingBinary(path, "host-local"));
  EXPECT_FALSE(IsSiblingBinary(path, "bridge"));
}

TEST_F(SiblingFileTest, ANoteAmongOthersIsFound) {
  std::vector<char> notes = Note(std::string("GNU") + '\0', NT_GNU_ABI_TAG, std::string(16, 'x'));
  const auto ours = Note(kOwner, kPluginNoteType, NoteText("host-local", kBuildToken));
  notes.insert(notes.end(), ours.begin(), ours.end());
  EXPECT_TRUE(IsSiblingBinary(Write("a", MakeElf(notes)), "host-local"));
}

TEST_F(SiblingFileTest, NoteSegmentPastTheFirstPageIsReadToo) {
  const auto path =
      Write("a", MakeElf(Note(kOwner, kPluginNoteType, NoteText("host-local", kBuildToken)), 9000));
  EXPECT_TRUE(IsSiblingBinary(path, "host-local"));
}

TEST_F(SiblingFileTest, AnotherBuildsTokenAnswersFalse) {
  const std::string other = std::string(kBuildToken) + "x";
  EXPECT_FALSE(IsSiblingBinary(
      Write("a", MakeElf(Note(kOwner, kPluginNoteType, NoteText("host-local", other)))),
      "host-local"));
  EXPECT_FALSE(IsSiblingBinary(
      Write("b", MakeElf(Note(kOwner, kPluginNoteType, NoteText("host-local", "")))),
      "host-local"));
}

TEST_F(SiblingFileTest, AnotherOwnerOrTypeAnswersFalse) {
  const std::string text = NoteText("host-local", kBuildToken);
  EXPECT_FALSE(IsSiblingBinary(
      Write("a", MakeElf(Note(std::string("nodegatX") + '\0', kPluginNoteType, text))),
      "host-local"));
  EXPECT_FALSE(
      IsSiblingBinary(Write("b", MakeElf(Note(kOwner, kPluginNoteType + 1, text))), "host-local"));
}

TEST_F(SiblingFileTest, NotAnElfOfThisMachineAnswersFalse) {
  const auto notes = Note(kOwner, kPluginNoteType, NoteText("host-local", kBuildToken));
  EXPECT_FALSE(IsSiblingBinary(Write("script", "#!/bin/sh\nexec true\n"), "host-local"));
  EXPECT_FALSE(IsSiblingBinary(Write("empty", ""), "host-local"));
  EXPECT_FALSE(IsSiblingBinary(Write("cut", MakeElf(notes).substr(0, 40)), "host-local"));
  const unsigned char other_class = kOwnClass == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;
  EXPECT_FALSE(IsSiblingBinary(Write("class", MakeElf(notes, 0x200, other_class)), "host-local"));
  EXPECT_FALSE(IsSiblingBinary((dir_ / "missing").string(), "host-local"));
}

TEST_F(SiblingFileTest, NoteSizesPastTheSegmentAnswerFalse) {
  auto notes = Note(kOwner, kPluginNoteType, NoteText("host-local", kBuildToken));
  const uint32_t huge = 0xfffffff0;
  std::memcpy(notes.data() + 4, &huge, 4);  // descsz
  EXPECT_FALSE(IsSiblingBinary(Write("a", MakeElf(notes)), "host-local"));
}

// ---- DelegateCall with a linked sibling ----

// What the fake sibling saw, and in which process it ran.
struct SiblingCall {
  pid_t pid = 0;
  Command command = Command::kVersion;
  std::string container_id;
  std::string stdin_data;
};
SiblingCall g_last_call;

Plugin FakeSibling() {
  Verbs verbs;
  auto record = [](const CmdArgs& a) {
    g_last_call = {::getpid(), a.command, a.container_id, a.stdin_data};
  };
  verbs.add = [record](const CmdArgs& a) -> Result<CniResult> {
    record(a);
    if (a.container_id == "exhausted") {
      return Error(kErrPluginNotAvailable, "no addresses left", "range 10.0.0.0/30");
    }
    CniResult r;
    r.ips.push_back({.address = *net::IpPrefix::Parse("10.22.0.5/24"),
                     .gateway = net::IpAddress::Parse("10.22.0.1")});
    return r;
  };
  verbs.del = [record](const CmdArgs& a) -> Status {
    record(a);
    return OkStatus();
  };
  verbs.check = verbs.gc = verbs.status = verbs.del;
  return SuitePlugin("sibling-test", AllVersions(), NetConfShape(), verbs);
}

class SiblingDelegateTest : public SiblingFileTest {
 protected:
  void SetUp() override {
    SiblingFileTest::SetUp();
    static const bool linked = [] {
      LinkSibling("sibling-test", &FakeSibling);
      return true;
    }();
    (void)linked;
    ::setenv("CNI_CONTAINERID", "ctr-1", 1);
    ::setenv("CNI_IFNAME", "eth0", 1);
    ::setenv("CNI_NETNS", "/run/netns/x", 1);
    ::setenv("CNI_PATH", dir_.c_str(), 1);
    args_.path = dir_.string();
    args_.container_id = "ctr-1";
    args_.stdin_data = R"({"cniVersion":"1.0.0","name":"net","type":"bridge"})";
    g_last_call = {};
  }

  CmdArgs args_;
};

TEST_F(SiblingDelegateTest, ThisBuildsBinaryRunsInThisProcess) {
  fs::copy_file(SelfExe(), dir_ / "sibling-test");
  auto call = DelegateCall::Start("sibling-test", Command::kAdd, args_);
  ASSERT_TRUE(call.ok()) << call.error().msg;
  EXPECT_EQ(g_last_call.pid, ::getpid());
  EXPECT_EQ(g_last_call.command, Command::kAdd);
  EXPECT_EQ(g_last_call.container_id, "ctr-1");
  EXPECT_EQ(g_last_call.stdin_data, args_.stdin_data);
  auto result = call->WaitForResult("1.0.0");
  ASSERT_TRUE(result.ok()) << result.error().msg;
  ASSERT_EQ(result->ips.size(), 1u);
  EXPECT_EQ(result->ips[0].address.ToString(), "10.22.0.5/24");
  EXPECT_EQ(result->cni_version, "1.0.0");
  // Collected once, as a child is.
  EXPECT_FALSE(call->Wait().ok());
}

TEST_F(SiblingDelegateTest, ItsErrorComesBackAsAChildsWould) {
  fs::copy_file(SelfExe(), dir_ / "sibling-test");
  ::setenv("CNI_CONTAINERID", "exhausted", 1);
  auto call = DelegateCall::Start("sibling-test", Command::kAdd, args_);
  ASSERT_TRUE(call.ok());
  auto result = call->WaitForResult("1.0.0");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, kErrPluginNotAvailable);
  EXPECT_EQ(result.error().msg, "no addresses left");
  EXPECT_EQ(result.error().details, "range 10.0.0.0/30");
}

TEST_F(SiblingDelegateTest, VerbsWithoutResultRunInProcessToo) {
  fs::copy_file(SelfExe(), dir_ / "sibling-test");
  args_.stdin_data = R"({"cniVersion":"1.1.0","name":"net","type":"bridge"})";  // STATUS: 1.1.0
  for (Command command : {Command::kDel, Command::kCheck, Command::kStatus}) {
    g_last_call = {};
    EXPECT_TRUE(DelegateWithoutResult("sibling-test", command, args_).ok());
    EXPECT_EQ(g_last_call.pid, ::getpid());
    EXPECT_EQ(g_last_call.command, command);
  }
}

TEST_F(SiblingDelegateTest, AnyOtherFileOfThatNameIsExeced) {
  // A wrapper script: not this build's binary, so exec'd; the sibling never runs.
  const auto path =
      Write("sibling-test",
            "#!/bin/sh\ncat >/dev/null\n"
            "echo '{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.9.9.9/24\"}]}'\n");
  ::chmod(path.c_str(), 0755);
  auto call = DelegateCall::Start("sibling-test", Command::kAdd, args_);
  ASSERT_TRUE(call.ok()) << call.error().msg;
  auto result = call->WaitForResult("1.0.0");
  ASSERT_TRUE(result.ok()) << result.error().msg;
  ASSERT_EQ(result->ips.size(), 1u);
  EXPECT_EQ(result->ips[0].address.ToString(), "10.9.9.9/24");
  EXPECT_EQ(g_last_call.pid, 0);
}

TEST_F(SiblingDelegateTest, OnlyLinkedTypesHaveASibling) {
  EXPECT_EQ(LinkedSibling("sibling-test"), &FakeSibling);
  EXPECT_EQ(LinkedSibling("host-local"), nullptr);
}

}  // namespace
}  // namespace nodegate::cni
