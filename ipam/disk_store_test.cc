// The disk store in a temporary directory: the reference's exact bytes and modes, the owner
// index (trusted, rebuilt after foreign changes, crashes and tampering), that a verb with
// a valid index reads no reservation file it does not need, and that an allocation walking
// over taken addresses does not try to create each of them.
#include "ipam/disk_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ipam/allocator.h"
#include "ipam/testing/fake_store.h"
#include "lib/cni/conf.h"

namespace nodegate::ipam {
namespace {

namespace fs = std::filesystem;
using testing::Ip;

class DiskStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-ipam-disk-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    data_dir_ = root_ + "/data";
    dir_ = data_dir_ + "/net1";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<DiskStore> Open() {
    auto store = DiskStore::Open(data_dir_, "net1");
    EXPECT_TRUE(store.ok()) << store.error().msg;
    return std::move(store).value();
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << content;
  }
  int Mode(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  std::set<std::string> Names() {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename());
    return out;
  }

  std::string root_, data_dir_, dir_;
};

TEST_F(DiskStoreTest, ReferenceLayoutAndBytes) {
  const mode_t old_umask = ::umask(022);
  {
    auto store = Open();
    auto r = store->Reserve(Owner{"ctr1", "eth0"}, Ip("10.88.0.2"), 0);
    ASSERT_TRUE(r.ok() && *r);
    auto r6 = store->Reserve(Owner{"ctr1", "eth0"}, Ip("2001:db8::2"), 1);
    ASSERT_TRUE(r6.ok() && *r6);
    ASSERT_TRUE(store->Commit().ok());
  }
  ::umask(old_umask);
  EXPECT_EQ(Read("10.88.0.2"), "ctr1\r\neth0");
  EXPECT_EQ(Read("2001:db8::2"), "ctr1\r\neth0");
  EXPECT_EQ(Read("last_reserved_ip.0"), "10.88.0.2");
  EXPECT_EQ(Read("last_reserved_ip.1"), "2001:db8::2");
  EXPECT_EQ(Read("lock"), "");
  EXPECT_EQ(Mode(dir_), 0755);
  EXPECT_EQ(Mode(dir_ + "/lock"), 0750);
  EXPECT_EQ(Mode(dir_ + "/10.88.0.2"), 0600);
  EXPECT_EQ(Names(), (std::set<std::string>{".nodegate", "10.88.0.2", "2001:db8::2",
                                            "last_reserved_ip.0", "last_reserved_ip.1", "lock"}));
}

TEST_F(DiskStoreTest, ReserveIsExclusive) {
  auto store = Open();
  EXPECT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
  EXPECT_FALSE(*store->Reserve(Owner{"b", "eth0"}, Ip("10.0.0.2"), 0));
  EXPECT_EQ(Read("10.0.0.2"), "a\r\neth0");
}

TEST_F(DiskStoreTest, IndexIsTrustedAfterCommitAndDelReadsOnlyItsFiles) {
  {
    auto store = Open();
    for (int i = 2; i < 502; ++i) {
      const std::string ip = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
      ASSERT_TRUE(*store->Reserve(Owner{"c" + std::to_string(i), "eth0"}, Ip(ip.c_str()), 0));
    }
    ASSERT_TRUE(store->Commit().ok());
  }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 0);
  auto found = store->FindByOwner(Owner{"c300", "eth0"});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, std::vector<net::IpAddress>{Ip("10.0.1.44")});
  auto released = store->ReleaseByOwner(Owner{"c300", "eth0"});
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 1);
  EXPECT_TRUE(*store->Reserve(Owner{"new", "eth0"}, Ip("10.0.9.9"), 0));
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(store->stats().files_scanned, 0) << "no full scan with a valid index";
  EXPECT_FALSE(fs::exists(dir_ + "/10.0.1.44"));
  store.reset();  // releases the lock (flock is per open file: a second Open would wait)
  auto again = Open();
  EXPECT_EQ(again->stats().rebuilds, 0);
  EXPECT_EQ(*again->FindByOwner(Owner{"new", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.9.9")});
}

TEST_F(DiskStoreTest, ForeignChangesTriggerRebuild) {
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
    ASSERT_TRUE(store->Commit().ok());
  }
  // What the reference does: create a reservation, delete another.
  Write("10.0.0.3", "b\r\neth0");
  fs::remove(dir_ + "/10.0.0.2");
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_EQ(*store->FindByOwner(Owner{"b", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.3")});
  EXPECT_TRUE(store->FindByOwner(Owner{"a", "eth0"})->empty());
}

TEST_F(DiskStoreTest, CrashBeforeCommitLeavesAnUntrustedIndex) {
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
    // destroyed without Commit: a killed process
  }
  EXPECT_EQ(Read(".nodegate/meta").substr(0, 1), "x") << "meta must be spoiled before changes";
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_EQ(*store->FindByOwner(Owner{"a", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.2")});
}

TEST_F(DiskStoreTest, RebuildDropsHalfWrittenFilesAndOurTemporaries) {
  { Open(); }
  Write("10.0.0.7", "");                  // the reference killed between O_EXCL create and write
  Write("10.0.0.8", " \r\n");             // whitespace only: same
  Write(".tmp-10.0.0.9.123", "x");        // ours, killed before rename
  Write("not-an-ip", "a\r\neth0");        // the reference's DEL would match any name: so do we
  Write("10.0.0.10", "bad id!\r\neth0");  // no valid ADD writes this: kept, never matched
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_FALSE(fs::exists(dir_ + "/10.0.0.7"));
  EXPECT_FALSE(fs::exists(dir_ + "/10.0.0.8"));
  EXPECT_FALSE(fs::exists(dir_ + "/.tmp-10.0.0.9.123"));
  EXPECT_FALSE(*store->IsReserved(Ip("10.0.0.7")));
  EXPECT_TRUE(*store->IsReserved(Ip("10.0.0.10")));
  EXPECT_EQ(*store->ReleaseByOwner(Owner{"a", "eth0"}), 1);
  EXPECT_FALSE(fs::exists(dir_ + "/not-an-ip"));
  auto listed = store->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_FALSE(listed->front().owner.has_value());
}

TEST_F(DiskStoreTest, TamperedFileBehindAValidIndexIsDetected) {
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
    ASSERT_TRUE(store->Commit().ok());
  }
  // Rewriting in place keeps the directory's mtime: the index still says "a".
  { std::ofstream(dir_ + "/10.0.0.2", std::ios::binary | std::ios::trunc) << "b\r\neth0"; }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 0);
  EXPECT_EQ(*store->ReleaseByOwner(Owner{"a", "eth0"}), 0) << "must not delete b's address";
  EXPECT_TRUE(fs::exists(dir_ + "/10.0.0.2"));
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_EQ(*store->FindByOwner(Owner{"b", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.2")});
}

TEST_F(DiskStoreTest, TornIndexBucketIsDetected) {
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
    ASSERT_TRUE(store->Commit().ok());
  }
  // Corrupt every bucket file (no directory entry changes, so meta still matches).
  for (const auto& e : fs::directory_iterator(dir_ + "/.nodegate/owners")) {
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "nodegate-ipam-owners 2\na:eth0";
  }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 0);
  EXPECT_EQ(*store->FindByOwner(Owner{"a", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.2")});
  EXPECT_EQ(store->stats().rebuilds, 1);
}

// A first rebuild creates every bucket file: few of them (see BucketOf in disk_store.cc).
TEST_F(DiskStoreTest, RebuildWritesAtMost16IndexFiles) {
  { Open(); }
  for (int i = 0; i < 400; ++i) {
    Write("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1),
          "c" + std::to_string(i) + "\r\neth0");
  }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_EQ(store->stats().files_scanned, 400);
  size_t index_files = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/.nodegate/owners")) {
    (void)e;
    ++index_files;
  }
  EXPECT_EQ(index_files, 16u);
  EXPECT_EQ(*store->FindByOwner(Owner{"c399", "eth0"}),
            std::vector<net::IpAddress>{Ip("10.1.1.150")});
}

// An index of the previous layout (version 1: 256 buckets) is never trusted, even with its
// marker intact: its buckets are removed and the index is rebuilt in this layout.
TEST_F(DiskStoreTest, IndexOfThePreviousLayoutIsRebuilt) {
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("10.0.0.2"), 0));
    ASSERT_TRUE(store->Commit().ok());
  }
  // Rewritten in place (the directory's mtime, the marker, stays): a version 1 index.
  std::string meta = Read(".nodegate/meta");
  ASSERT_EQ(meta.rfind("nodegate-ipam-index 2\n", 0), 0u) << meta;
  meta.replace(0, 21, "nodegate-ipam-index 1");
  { std::ofstream(dir_ + "/.nodegate/meta", std::ios::binary | std::ios::in) << meta; }
  { std::ofstream(dir_ + "/.nodegate/owners/b7f", std::ios::binary) << "nodegate-ipam-owners 1\n"; }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_FALSE(fs::exists(dir_ + "/.nodegate/owners/b7f"));
  EXPECT_EQ(*store->FindByOwner(Owner{"a", "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.2")});
}

TEST_F(DiskStoreTest, LastReservedAndRemove) {
  auto store = Open();
  EXPECT_FALSE(store->LastReserved(0)->has_value());
  Write("last_reserved_ip.0", "garbage");
  EXPECT_FALSE(store->LastReserved(0)->has_value());
  ASSERT_TRUE(*store->Reserve(Owner{"a", "eth0"}, Ip("2001:db8::5"), 0));
  EXPECT_EQ(**store->LastReserved(0), Ip("2001:db8::5"));
  ASSERT_TRUE(store->Remove(Ip("2001:db8::5")).ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_TRUE(store->FindByOwner(Owner{"a", "eth0"})->empty());
  store.reset();
  auto again = Open();
  EXPECT_EQ(again->stats().rebuilds, 0);
  EXPECT_TRUE(again->FindByOwner(Owner{"a", "eth0"})->empty());
}

TEST_F(DiskStoreTest, LongOwnerKeysWork) {
  const std::string id(230, 'x');
  {
    auto store = Open();
    ASSERT_TRUE(*store->Reserve(Owner{id, "eth0"}, Ip("10.0.0.2"), 0));
    ASSERT_TRUE(store->Commit().ok());
  }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 0);
  EXPECT_EQ(*store->FindByOwner(Owner{id, "eth0"}), std::vector<net::IpAddress>{Ip("10.0.0.2")});
}

IpamConfig SixteenConfig() {
  auto conf = cni::ParseNetConf(
      R"({"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[{"subnet":"10.1.0.0/16"}]]}})");
  EXPECT_TRUE(conf.ok());
  auto cfg = LoadIpamConfig(*conf, "", Verb::kAdd);
  EXPECT_TRUE(cfg.ok()) << cfg.error().msg;
  return *cfg;
}

std::string NthAddress(int i) {  // the i-th allocatable address of 10.1.0.0/16
  const int n = i + 2;
  return "10.1." + std::to_string(n / 256) + "." + std::to_string(n % 256);
}

std::string AllocateOne(DiskStore& store, const std::string& id) {
  auto got = AllocateAll(SixteenConfig(), Owner{id, "eth0"}, store);
  if (!got.ok()) return "error: " + got.error().msg;
  return got->front().ip.ToString();
}

// The first call after a switch from the reference, which left no last_reserved_ip.N: the
// round robin starts at the range's start and walks over every reservation, as the
// reference's does. The rebuild has just listed them, so only the free address is created.
TEST_F(DiskStoreTest, FirstCallWithoutCursorCreatesOnlyTheFreeAddress) {
  ::mkdir(data_dir_.c_str(), 0755);
  ::mkdir(dir_.c_str(), 0755);
  for (int i = 0; i < 600; ++i) {
    if (i != 400) Write(NthAddress(i), "fill" + std::to_string(i) + "\r\neth0");
  }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 1);
  EXPECT_EQ(store->stats().files_scanned, 599) << "each reservation read once, by the rebuild";
  EXPECT_EQ(AllocateOne(*store, "a"), NthAddress(400)) << "the reference's order: the hole first";
  EXPECT_EQ(AllocateOne(*store, "b"), NthAddress(600));
  EXPECT_EQ(store->stats().links_tried, 2) << "one create per allocation, none per taken address";
  EXPECT_EQ(store->stats().files_scanned, 599);
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(Read(NthAddress(600)), "b\r\neth0");
  EXPECT_EQ(Read("last_reserved_ip.0"), NthAddress(600));
}

// With a trusted index (no rebuild, nothing listed) the walk meets a run of reservations when
// the cursor lies behind them: the first failed create lists the directory once, and the
// rest of the walk asks that listing.
TEST_F(DiskStoreTest, WalkIntoARunOfReservationsListsTheDirectoryOnce) {
  {
    auto store = Open();
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(
          *store->Reserve(Owner{"c" + std::to_string(i), "eth0"}, Ip(NthAddress(i).c_str()), 0));
    }
    ASSERT_TRUE(store->Commit().ok());
  }
  // Rewritten in place, which keeps the directory's mtime: the index stays trusted, and the
  // walk starts over at the range's start.
  { std::ofstream(dir_ + "/last_reserved_ip.0", std::ios::binary | std::ios::in) << "10.1.0.1 "; }
  auto store = Open();
  EXPECT_EQ(store->stats().rebuilds, 0);
  EXPECT_EQ(AllocateOne(*store, "late"), NthAddress(300));
  EXPECT_EQ(store->stats().links_tried, 2) << "the first taken address, then the free one";
  EXPECT_EQ(store->stats().files_scanned, 0);
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(Read(NthAddress(300)), "late\r\neth0");
}

// A name listed before this call's own release is free again, and one this call took is not.
TEST_F(DiskStoreTest, ListedNamesFollowThisCallsChanges) {
  ::mkdir(data_dir_.c_str(), 0755);
  ::mkdir(dir_.c_str(), 0755);
  for (int i = 0; i < 3; ++i) Write(NthAddress(i), "c" + std::to_string(i) + "\r\neth0");
  auto store = Open();  // rebuilds, so every name is listed
  ASSERT_EQ(*store->ReleaseByOwner(Owner{"c1", "eth0"}), 1);
  EXPECT_EQ(AllocateOne(*store, "a"), NthAddress(1));
  EXPECT_FALSE(*store->Reserve(Owner{"b", "eth0"}, Ip(NthAddress(1).c_str()), 0));
  EXPECT_EQ(AllocateOne(*store, "b"), NthAddress(3));
}

TEST(OwnerTest, EncodeDecode) {
  EXPECT_EQ(EncodeOwner(Owner{"c", "eth0"}), "c\r\neth0");
  EXPECT_EQ(EncodeOwner(Owner{"c", ""}), "c");
  EXPECT_EQ(DecodeOwner("  c\r\neth0\n"), (Owner{"c", "eth0"}));
  EXPECT_EQ(DecodeOwner("c"), (Owner{"c", ""}));
  EXPECT_EQ(DecodeOwner(""), std::nullopt);
  EXPECT_EQ(DecodeOwner("c\r\neth 0"), std::nullopt);
  EXPECT_EQ(DecodeOwner("-c\r\neth0"), std::nullopt);
}

}  // namespace
}  // namespace nodegate::ipam
