#include "runtime_stub/build_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stitch::runtime {
namespace {

namespace fs = std::filesystem;

class BuildCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/build_cache_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string read(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  // A cache with one entry "k-stitch_emu.cc.o" of output "object" and log "log".
  BuildCache filled() {
    Result<BuildCache> cache = BuildCache::open(root_ / "cache");
    EXPECT_TRUE(cache.is_ok()) << cache.status().message();
    EXPECT_TRUE(cache->store("k-stitch_emu.cc.o", "object", "log").is_ok());
    return std::move(cache).value();
  }

  fs::path root_;
};

TEST_F(BuildCacheTest, CreatesAPrivateDirectoryAndRestoresWhatItStored) {
  BuildCache cache = filled();
  struct stat info {};
  ASSERT_EQ(stat((root_ / "cache").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  Result<std::optional<BuildCacheEntry>> entry = cache.lookup("k-stitch_emu.cc.o");
  ASSERT_TRUE(entry.is_ok()) << entry.status().message();
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->output, "object");
  EXPECT_EQ((*entry)->log, "log");
  Result<std::optional<BuildCacheEntry>> absent = cache.lookup("other-stitch_emu.cc.o");
  ASSERT_TRUE(absent.is_ok());
  EXPECT_FALSE(absent->has_value());
  // Only the entry: no temporary file left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / "cache"), fs::directory_iterator()), 1);
}

TEST_F(BuildCacheTest, RefusesADirectoryOthersCanWrite) {
  fs::create_directory(root_ / "shared");
  ASSERT_EQ(chmod((root_ / "shared").c_str(), 0777), 0);
  Result<BuildCache> cache = BuildCache::open(root_ / "shared");
  ASSERT_FALSE(cache.is_ok());
  EXPECT_EQ(cache.status().message(),
            "the build cache " + (root_ / "shared").string() +
                " ($STITCH_BUILD_CACHE) may not be used: it is writable by group or others (mode "
                "0777), and whoever can write there could run code as you; make it a directory "
                "of yours that only you can write (chmod 700), or unset STITCH_BUILD_CACHE");
}

TEST_F(BuildCacheTest, ACorruptEntryIsNotUsed) {
  BuildCache cache = filled();
  const fs::path entry = root_ / "cache" / "k-stitch_emu.cc.o";
  std::string bytes = read(entry);
  bytes[bytes.size() - 5] ^= 1;  // one bit of the object
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;
  Result<std::optional<BuildCacheEntry>> found = cache.lookup("k-stitch_emu.cc.o");
  ASSERT_FALSE(found.is_ok());
  EXPECT_EQ(
      found.status().message(),
      "build cache entry " + entry.string() +
          " is not used: its content does not match the checksum recorded when it was filled");

  std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  found = cache.lookup("k-stitch_emu.cc.o");
  ASSERT_FALSE(found.is_ok());
  EXPECT_NE(found.status().message().find("its size does not match"), std::string::npos);

  // A store replaces the broken entry.
  ASSERT_TRUE(cache.store("k-stitch_emu.cc.o", "object", "log").is_ok());
  EXPECT_TRUE(cache.lookup("k-stitch_emu.cc.o").is_ok());
}

TEST_F(BuildCacheTest, AnEntryThatIsALinkOrWritableByOthersIsNotUsed) {
  BuildCache cache = filled();
  std::ofstream(root_ / "planted.o") << "not an entry";
  fs::create_symlink(root_ / "planted.o", root_ / "cache" / "link-stitch_emu.cc.o");
  Result<std::optional<BuildCacheEntry>> linked = cache.lookup("link-stitch_emu.cc.o");
  ASSERT_FALSE(linked.is_ok());
  EXPECT_NE(linked.status().message().find("cannot be opened"), std::string::npos);

  ASSERT_EQ(chmod((root_ / "cache" / "k-stitch_emu.cc.o").c_str(), 0666), 0);
  Result<std::optional<BuildCacheEntry>> writable = cache.lookup("k-stitch_emu.cc.o");
  ASSERT_FALSE(writable.is_ok());
  EXPECT_NE(writable.status().message().find("writable by group or others (mode 0666)"),
            std::string::npos);

  ASSERT_EQ(mkfifo((root_ / "cache" / "fifo-stitch_emu.cc.o").c_str(), 0600), 0);
  Result<std::optional<BuildCacheEntry>> fifo = cache.lookup("fifo-stitch_emu.cc.o");
  ASSERT_FALSE(fifo.is_ok());
  EXPECT_NE(fifo.status().message().find("not a regular file"), std::string::npos);
}

TEST_F(BuildCacheTest, AStoreReplacesALinkInsteadOfWritingThroughIt) {
  BuildCache cache = filled();
  std::ofstream(root_ / "victim.txt") << "the user's file\n";
  fs::create_symlink(root_ / "victim.txt", root_ / "cache" / "v-stitch_pch.h.gch");
  ASSERT_TRUE(cache.store("v-stitch_pch.h.gch", "header", "").is_ok());
  EXPECT_EQ(read(root_ / "victim.txt"), "the user's file\n");
  EXPECT_FALSE(fs::is_symlink(root_ / "cache" / "v-stitch_pch.h.gch"));
}

}  // namespace
}  // namespace stitch::runtime
