// Tests of support/subprocess.h with /bin/sh as the child: exit codes, signals,
// capture, time limits that also end the child's own children.
#include "support/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stitch::support {
namespace {

ProcessResult sh(const std::string& script, double timeout_seconds = 10) {
  ProcessOptions options;
  options.timeout_seconds = timeout_seconds;
  return run_process({"/bin/sh", "-c", script}, options);
}

TEST(SubprocessTest, CapturesStdoutAndStderrAndTheExitCode) {
  ProcessResult result = sh("echo out; echo err >&2; exit 3");
  EXPECT_TRUE(result.started);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.output, "out\nerr\n");
  EXPECT_FALSE(result.succeeded());
  EXPECT_EQ(result.failure(), "exit code 3");
  EXPECT_TRUE(sh("true").succeeded());
  EXPECT_EQ(sh("true").failure(), "");
}

// temp_directory replaces TMPDIR and drops TMP and TEMP; the rest of the environment
// is the parent's. Without it the child sees the parent's TMPDIR.
TEST(SubprocessTest, SetsTheChildsTemporaryDirectory) {
  ASSERT_EQ(setenv("TMP", "/parent-tmp", 1), 0);
  ASSERT_EQ(setenv("TEMP", "/parent-temp", 1), 0);
  ASSERT_EQ(setenv("STITCH_SUBPROCESS_TEST", "kept", 1), 0);
  ProcessOptions options;
  options.temp_directory = "/private/tmp dir";
  ProcessResult result =
      run_process({"/bin/sh", "-c",
                   "printf '%s|%s|%s|%s' \"$TMPDIR\" \"${TMP-unset}\" \"${TEMP-unset}\" "
                   "\"$STITCH_SUBPROCESS_TEST\""},
                  options);
  EXPECT_EQ(result.output, "/private/tmp dir|unset|unset|kept");
  const char* parent = std::getenv("TMPDIR");
  const std::string saved = parent ? parent : "";
  ASSERT_EQ(setenv("TMPDIR", "/parent-tmpdir", 1), 0);
  EXPECT_EQ(sh("printf %s \"$TMPDIR\"").output, "/parent-tmpdir");
  if (parent) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  unsetenv("TMP");
  unsetenv("TEMP");
  unsetenv("STITCH_SUBPROCESS_TEST");
}

TEST(SubprocessTest, ReportsASignal) {
  ProcessResult result = sh("kill -SEGV $$");
  EXPECT_EQ(result.signal_number, SIGSEGV);
  EXPECT_EQ(result.failure(), "killed by signal 11");
}

TEST(SubprocessTest, KillsTheWholeGroupAtTheDeadline) {
  std::filesystem::path marker =
      std::filesystem::temp_directory_path() / ("stitch_subprocess_" + std::to_string(getpid()));
  std::filesystem::remove(marker);
  auto start = std::chrono::steady_clock::now();
  // The grandchild would write the marker after 2 s if it survived its parent's kill.
  ProcessResult result = sh("(sleep 2; touch " + marker.string() + ") & sleep 30", 0.5);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(seconds, 5);
  EXPECT_EQ(result.failure(), "still running after 0.5 s: killed");
  sleep(3);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the grandchild outlived the time limit";
  std::filesystem::remove(marker);
}

TEST(SubprocessTest, KeepsTheTailOfLongOutput) {
  ProcessOptions options;
  options.max_captured_bytes = 1000;
  ProcessResult result = run_process(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"}, options);
  EXPECT_EQ(result.output.size(), 1000u);
  EXPECT_NE(result.output.find("line1999\n"), std::string::npos);
}

TEST(SubprocessTest, WritesToAFileWhenAsked) {
  std::filesystem::path log = std::filesystem::temp_directory_path() /
                              ("stitch_subprocess_log_" + std::to_string(getpid()));
  ProcessOptions options;
  options.output_path = log.string();
  ProcessResult result = run_process({"/bin/sh", "-c", "echo to the log"}, options);
  EXPECT_TRUE(result.succeeded());
  EXPECT_EQ(result.output, "");
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), "to the log\n");
  std::filesystem::remove(log);
}

TEST(SubprocessTest, AMissingProgramDoesNotStart) {
  ProcessResult result = run_process({"/no/such/tool"}, ProcessOptions{});
  EXPECT_FALSE(result.started);
  EXPECT_EQ(result.failure(), "cannot start: No such file or directory");
}

}  // namespace
}  // namespace stitch::support
