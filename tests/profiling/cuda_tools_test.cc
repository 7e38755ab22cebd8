// profiling/cuda_tools.h: nvdisasm is found in a PyPI wheel's layout under a venv
// (the checkout's .venv above build/bin, or $VIRTUAL_ENV), and a named tool that does
// not exist is an error rather than a silent partial estimate.
#include "profiling/cuda_tools.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace stitch::profiling {
namespace {

namespace fs = std::filesystem;

class CudaToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stitch_cuda_tools_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    // Environments that would come first in the search: restored after the test.
    for (const char* name : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    fs::remove_all(root_);
  }
  // An executable file at `relative` under the temporary root.
  std::string tool(const std::string& relative) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }
  fs::path root_;
  std::map<std::string, std::string> saved_;
};

TEST_F(CudaToolsTest, FindsTheCheckoutsVenvAboveTheBuildDirectory) {
  // checkout/build/bin/stitchopt and checkout/.venv (scripts/setup.sh's layout).
  const std::string executable = tool("checkout/build/bin/stitchopt");
  const std::string nvdisasm =
      tool("checkout/.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvdisasm");
  EXPECT_EQ(find_wheel_nvdisasm(wheel_search_roots(executable, 3)), nvdisasm);
  // Not when the venv is further up than the levels searched.
  EXPECT_EQ(find_wheel_nvdisasm(wheel_search_roots(executable, 1)), "");
}

TEST_F(CudaToolsTest, PrefersVirtualEnvAndTheNewestWheel) {
  const std::string executable = tool("checkout/build/bin/stitchopt");
  tool("checkout/.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvdisasm");
  tool("env/lib/python3.12/site-packages/nvidia/cu12/bin/nvdisasm");
  const std::string newest = tool("env/lib/python3.12/site-packages/nvidia/cu13/bin/nvdisasm");
  setenv("VIRTUAL_ENV", (root_ / "env").c_str(), 1);
  const std::vector<std::string> roots = wheel_search_roots(executable, 3);
  ASSERT_FALSE(roots.empty());
  EXPECT_EQ(roots.front(), (root_ / "env").string());
  EXPECT_EQ(find_wheel_nvdisasm(roots), newest);
}

TEST_F(CudaToolsTest, FindsTheCuda12WheelLayout) {
  const std::string nvdisasm =
      tool("venv/lib/python3.10/site-packages/nvidia/cuda_nvdisasm/bin/nvdisasm");
  EXPECT_EQ(find_wheel_nvdisasm({(root_ / "venv/lib/python3.10/site-packages").string()}),
            nvdisasm);
}

TEST_F(CudaToolsTest, IgnoresAFileThatIsNotExecutable) {
  const fs::path path = root_ / "venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvdisasm";
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "not a program\n";
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(find_wheel_nvdisasm({(root_ / "venv").string(),
                                 (root_ / "venv/lib/python3.11/site-packages").string()}),
            "");
}

TEST_F(CudaToolsTest, ANamedToolThatDoesNotExistIsAnError) {
  const std::string missing = (root_ / "no/such/nvdisasm").string();
  Result<std::string> found = find_nvdisasm(missing, "");
  ASSERT_FALSE(found.is_ok());
  EXPECT_NE(found.status().message().find(missing), std::string::npos);
  EXPECT_FALSE(find_nvcc(missing).is_ok());
  const std::string present = tool("bin/nvdisasm");
  Result<std::string> named = find_nvdisasm(present, "");
  ASSERT_TRUE(named.is_ok());
  EXPECT_EQ(*named, present);
}

TEST_F(CudaToolsTest, TheEnvironmentVariableMustNameAnExecutable) {
  setenv("STITCH_NVDISASM", (root_ / "missing").c_str(), 1);
  EXPECT_FALSE(find_nvdisasm("", "").is_ok());
  const std::string present = tool("bin/nvdisasm");
  setenv("STITCH_NVDISASM", present.c_str(), 1);
  Result<std::string> found = find_nvdisasm("", "");
  unsetenv("STITCH_NVDISASM");
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(*found, present);
}

TEST_F(CudaToolsTest, LooksBesideTheNvccItUses) {
  if (const char* saved = std::getenv("STITCH_NVDISASM")) GTEST_SKIP() << saved;
  const std::string nvcc = tool("toolkit/bin/nvcc");
  const std::string nvdisasm = tool("toolkit/bin/nvdisasm");
  const char* path = std::getenv("PATH");
  const std::string saved_path = path ? path : "";
  setenv("PATH", (root_ / "empty").c_str(), 1);
  Result<std::string> found = find_nvdisasm("", nvcc);
  setenv("PATH", saved_path.c_str(), 1);
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(*found, nvdisasm);
}

}  // namespace
}  // namespace stitch::profiling
