// read_regular_file / read_regular_file_under: regular files only, size-capped, no
// blocking on a FIFO, no unbounded read of a device, no link followed inside an
// output directory; exact error text.
#include "support/bounded_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace stitch::support {
namespace {
namespace fs = std::filesystem;

class BoundedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stitch_bounded_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  static std::string error_of(const Result<std::string>& result) {
    EXPECT_FALSE(result.is_ok());
    return result.is_ok() ? "" : result.status().message();
  }

  fs::path dir_;
};

TEST_F(BoundedFileTest, ReadsARegularFileUpToTheLimit) {
  fs::path path = write("ok.json", "0123456789");
  Result<std::string> text = read_regular_file(path, 10, "device profile");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_EQ(*text, "0123456789");
  fs::path empty = write("empty.json", "");
  Result<std::string> nothing = read_regular_file(empty, 10, "device profile");
  ASSERT_TRUE(nothing.is_ok()) << nothing.status().message();
  EXPECT_EQ(*nothing, "");
}

TEST_F(BoundedFileTest, RefusesAFileOverTheLimitFromItsSize) {
  fs::path path = write("big.json", std::string(3 << 20, ' '));
  EXPECT_EQ(error_of(read_regular_file(path, 1 << 20, "device profile")),
            path.string() +
                ": the device profile is 3145728 bytes, more than the 1 MiB (1048576 bytes) a "
                "device profile may have");
  EXPECT_EQ(error_of(read_regular_file(path, 3000, "model")),
            path.string() +
                ": the model is 3145728 bytes, more than the 3000 bytes a model may "
                "have");
}

// A file whose size says less than it holds (procfs reports 0; or one that grows
// while it is read) is cut off one byte past the limit.
TEST_F(BoundedFileTest, RefusesAFileThatHoldsMoreThanItsSizeSays) {
  EXPECT_EQ(error_of(read_regular_file("/proc/self/status", 10, "device profile")),
            "/proc/self/status: the device profile grew past the 10 bytes a device profile may "
            "have while it was read");
}

TEST_F(BoundedFileTest, RefusesAFifoWithoutBlocking) {
  fs::path fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens it: a blocking open or read would hang the test.
  EXPECT_EQ(error_of(read_regular_file(fifo, 1 << 20, "device profile")),
            fifo.string() + ": the device profile is a FIFO, not a regular file");
}

TEST_F(BoundedFileTest, RefusesADeviceBehindALink) {
  // The user's own link is followed; what it leads to must still be a regular file.
  fs::path link = dir_ / "zero.json";
  fs::create_symlink("/dev/zero", link);
  EXPECT_EQ(error_of(read_regular_file(link, 1 << 20, "device profile")),
            link.string() + ": the device profile is a character device, not a regular file");
}

TEST_F(BoundedFileTest, FollowsTheUsersLinkToARegularFile) {
  fs::path target = write("real.json", "{}");
  fs::path link = dir_ / "link.json";
  fs::create_symlink(target, link);
  Result<std::string> text = read_regular_file(link, 10, "device profile");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_EQ(*text, "{}");
}

TEST_F(BoundedFileTest, RefusesADirectoryAndAMissingFile) {
  EXPECT_EQ(error_of(read_regular_file(dir_, 10, "device profile")),
            dir_.string() + ": the device profile is a directory, not a regular file");
  EXPECT_EQ(error_of(read_regular_file(dir_ / "missing.json", 10, "device profile")),
            (dir_ / "missing.json").string() +
                ": cannot open the device profile: No such file or directory");
}

TEST_F(BoundedFileTest, UnderReadsAFileBelowTheRoot) {
  write("out/kernels/kernels.json", "[]");
  Result<std::string> text =
      read_regular_file_under(dir_ / "out", "kernels/kernels.json", 10, "kernels.json");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_EQ(*text, "[]");
}

TEST_F(BoundedFileTest, UnderFollowsTheRootItself) {
  write("real_out/model.fused.onnx", "bytes");
  fs::create_symlink(dir_ / "real_out", dir_ / "out");
  Result<std::string> text = read_regular_file_under(dir_ / "out", "model.fused.onnx", 10, "model");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_EQ(*text, "bytes");
}

TEST_F(BoundedFileTest, UnderRefusesALinkAtTheFile) {
  fs::path secret = write("outside/notes.txt", "secret");
  write("out/kernels/k.cu", "");
  fs::create_symlink(secret, dir_ / "out/kernels/kernels.json");
  EXPECT_EQ(
      error_of(read_regular_file_under(dir_ / "out", "kernels/kernels.json", 100, "kernels.json")),
      (dir_ / "out/kernels/kernels.json").string() +
          ": the kernels.json is a symbolic link; stitchopt does not follow links inside "
          "an output directory");
}

TEST_F(BoundedFileTest, UnderRefusesALinkOnTheWay) {
  write("outside/kernels.json", "{}");
  fs::create_directories(dir_ / "out");
  fs::create_symlink(dir_ / "outside", dir_ / "out/kernels");
  EXPECT_EQ(
      error_of(read_regular_file_under(dir_ / "out", "kernels/kernels.json", 100, "kernels.json")),
      (dir_ / "out/kernels/kernels.json").string() +
          ": the kernels.json is reached through the symbolic link " +
          (dir_ / "out/kernels").string() +
          "; stitchopt does not follow links inside an output directory");
}

TEST_F(BoundedFileTest, UnderAppliesTheSameChecksToWhatItOpens) {
  fs::create_directories(dir_ / "out");
  ASSERT_EQ(::mkfifo((dir_ / "out/model.fused.onnx").c_str(), 0600), 0);
  EXPECT_EQ(error_of(read_regular_file_under(dir_ / "out", "model.fused.onnx", 100, "model")),
            (dir_ / "out/model.fused.onnx").string() + ": the model is a FIFO, not a regular file");
  write("out/kernels.json", std::string(101, ' '));
  EXPECT_EQ(error_of(read_regular_file_under(dir_ / "out", "kernels.json", 100, "kernels.json")),
            (dir_ / "out/kernels.json").string() +
                ": the kernels.json is 101 bytes, more than the 100 bytes a kernels.json may have");
  EXPECT_EQ(error_of(read_regular_file_under(dir_ / "out", "none.json", 100, "kernels.json")),
            (dir_ / "out/none.json").string() +
                ": cannot open the kernels.json: No such file or directory");
}

}  // namespace
}  // namespace stitch::support
