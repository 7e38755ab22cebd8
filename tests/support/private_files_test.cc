#include "support/private_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stitch::support {
namespace {

namespace fs = std::filesystem;

class PrivateFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/private_files_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    fs::create_directory(root_ / "outside");
    victim_ = root_ / "outside" / "victim.txt";
    std::ofstream(victim_) << "the user's file\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string read(const fs::path& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  fs::path root_;
  fs::path victim_;
};

TEST_F(PrivateFilesTest, WritesThroughNoLink) {
  const fs::path planted = root_ / "profile.json";
  fs::create_symlink(victim_, planted);
  ASSERT_TRUE(write_file_atomically(planted, "{}\n").is_ok());
  EXPECT_EQ(read(victim_), "the user's file\n");
  EXPECT_FALSE(fs::is_symlink(planted));
  EXPECT_EQ(read(planted), "{}\n");
}

TEST_F(PrivateFilesTest, WriteIfDifferentKeepsAnEqualFileAndReplacesALinkToOne) {
  const fs::path header = root_ / "stitch_emu.h";
  ASSERT_TRUE(write_file_if_different(header, "same\n").is_ok());
  struct stat before {};
  ASSERT_EQ(stat(header.c_str(), &before), 0);
  ASSERT_TRUE(write_file_if_different(header, "same\n").is_ok());
  struct stat after {};
  ASSERT_EQ(stat(header.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rewritten

  // A link to a file that happens to hold the text is still replaced by a file.
  const fs::path linked = root_ / "linked.h";
  std::ofstream(root_ / "outside" / "same.h") << "same\n";
  fs::create_symlink(root_ / "outside" / "same.h", linked);
  ASSERT_TRUE(write_file_if_different(linked, "same\n").is_ok());
  EXPECT_FALSE(fs::is_symlink(linked));
}

TEST_F(PrivateFilesTest, BuildDirectoryKeepsOnlyPlainFiles) {
  const fs::path build = root_ / "kernels" / "emu_build";
  fs::create_directories(build);
  std::ofstream(build / "stitch_emu.cc.o") << "object";
  fs::create_symlink(victim_, build / "stitch_emu.h");
  fs::create_symlink(victim_, build / "stitch_emu.cc.log");
  ASSERT_EQ(mkfifo((build / "fifo").c_str(), 0644), 0);
  ASSERT_EQ(link(victim_.c_str(), (build / "hard.o").c_str()), 0);
  ASSERT_TRUE(prepare_build_directory(build, true).is_ok());
  std::vector<std::string> left;
  for (const fs::directory_entry& entry : fs::directory_iterator(build)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"stitch_emu.cc.o"});
  EXPECT_EQ(read(victim_), "the user's file\n");
}

TEST_F(PrivateFilesTest, BuildDirectoryThatIsALinkIsReplaced) {
  fs::create_directories(root_ / "kernels");
  const fs::path build = root_ / "kernels" / "emu_build";
  fs::create_directory_symlink(root_ / "outside", build);
  ASSERT_TRUE(prepare_build_directory(build, true).is_ok());
  EXPECT_FALSE(fs::is_symlink(build));
  EXPECT_TRUE(fs::is_directory(build));
  EXPECT_TRUE(fs::exists(victim_));
}

TEST_F(PrivateFilesTest, BuildDirectoryUnderALinkedParentIsRefused) {
  fs::create_directory_symlink(root_ / "outside", root_ / "kernels");
  Status status = prepare_build_directory(root_ / "kernels" / "emu_build", true);
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.message(),
            (root_ / "kernels").string() +
                " is a symbolic link; stitchopt writes its build products only inside the output "
                "directory: recompile the model into a new output directory");
  EXPECT_FALSE(fs::exists(root_ / "outside" / "emu_build"));
}

}  // namespace
}  // namespace stitch::support
