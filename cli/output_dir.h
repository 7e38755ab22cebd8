// The output directory of `stitchopt MODEL -o OUT` (DESIGN.md, cli/ and Untrusted
// input): all or nothing, and never at the cost of files stitchopt did not write.
//
// A run writes into a staging directory beside OUT ("OUT.stitchopt-tmp-<pid>") and
// renames it into place only when every phase succeeded, so a failed run leaves OUT
// as it was. OUT may be replaced only when it
//   - does not exist, or is an empty directory, or
//   - is an earlier stitchopt output: its report.json has the report schema and it
//     holds nothing but the files stitchopt writes there (model.fused.onnx,
//     report.json, plan.dot, plan.svg, profile.json, ir/NN-PASS.ir, kernels/ with
//     generated sources and the build directories `stitchopt run` makes), no
//     symbolic links among them;
// otherwise the run stops with exit 2 before any work, naming the first foreign
// entry and --force. With --force any directory may be replaced except one that
// holds the input model or its external data, the working directory, $HOME or the
// root (nor any directory above them): those are refused in every case.
//
// Concurrent runs into one OUT: the run holds an exclusive lock (flock) on OUT
// while it works; a second run that finds OUT locked stops with exit 2 (so does a
// compile while `run`, `bench` or `profile` uses OUT: OutputDirectoryUse). SIGINT,
// SIGTERM and SIGHUP remove the staging directory (support/interrupt.h).
//
// A run killed by SIGKILL cannot remove its staging directory: the next compile into
// the same OUT removes "OUT.stitchopt-tmp-<pid>" directories whose process is gone
// and that hold stitchopt's marker file (kStagingMarker), and nothing else.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ir/core/status.h"

namespace stitch::cli {

struct OutputDirectoryOptions {
  bool force = false;  // --force
  // Files a replaced OUT must never contain: the input model, its external data.
  std::vector<std::filesystem::path> protected_files;
};

// Why `target` may not be replaced, or ok. `target` as the user wrote it (messages
// quote it); relative paths are taken from the working directory.
Status check_output_directory(const std::filesystem::path& target,
                              const OutputDirectoryOptions& options);

// The file that marks a staging directory as stitchopt's (what a later run may sweep).
inline constexpr const char* kStagingMarker = ".stitchopt-staging";

class StagedOutputDirectory {
 public:
  // Checks `target` (check_output_directory), locks it, and creates the staging
  // directory beside it (and OUT's missing parents, removed again on failure).
  static Result<StagedOutputDirectory> create(const std::filesystem::path& target,
                                              const OutputDirectoryOptions& options);
  StagedOutputDirectory(StagedOutputDirectory&& other) noexcept;
  StagedOutputDirectory& operator=(StagedOutputDirectory&&) = delete;
  // Removes the staging directory (and what create() made) unless commit() succeeded.
  ~StagedOutputDirectory();

  const std::filesystem::path& path() const { return staging_; }
  // Replaces the target with the staging directory.
  Status commit();

 private:
  StagedOutputDirectory() = default;
  std::filesystem::path target_;  // absolute, symbolic links resolved
  std::filesystem::path staging_;
  std::vector<std::filesystem::path> created_;  // directories create() made, deepest last
  int lock_fd_ = -1;
  bool committed_ = false;
};

// `stitchopt run`, `bench` and `profile` build in OUT/kernels and write
// OUT/profile.json: while one uses OUT it holds the same exclusive lock a compile
// takes, so a second one waits for it (saying so on stderr) and a compile into OUT
// is refused instead of replacing the directory under it. Interrupting the wait
// (SIGINT) ends the command.
class OutputDirectoryUse {
 public:
  static Result<OutputDirectoryUse> acquire(const std::filesystem::path& out_dir);
  OutputDirectoryUse(OutputDirectoryUse&& other) noexcept;
  OutputDirectoryUse& operator=(OutputDirectoryUse&&) = delete;
  ~OutputDirectoryUse();

 private:
  OutputDirectoryUse() = default;
  int lock_fd_ = -1;
};

}  // namespace stitch::cli
