// All-or-nothing output directories: a run writes into a temporary directory beside
// the target and renames it into place at the end, so a failed run never leaves a
// half-written out/ (DESIGN.md, cli/).
#pragma once

#include <filesystem>
#include <string>

#include "ir/status.h"

namespace stitch::cli {

class StagedOutputDirectory {
 public:
  // Creates "<target>.stitchopt-tmp-<pid>" beside `target`.
  static Result<StagedOutputDirectory> create(const std::filesystem::path& target);
  StagedOutputDirectory(StagedOutputDirectory&& other) noexcept;
  StagedOutputDirectory& operator=(StagedOutputDirectory&&) = delete;
  // Removes the staging directory unless commit() succeeded.
  ~StagedOutputDirectory();

  const std::filesystem::path& path() const { return staging_; }
  // Replaces `target` (an existing directory is removed) with the staging directory.
  Status commit();

 private:
  StagedOutputDirectory(std::filesystem::path target, std::filesystem::path staging)
      : target_(std::move(target)), staging_(std::move(staging)) {}
  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

}  // namespace stitch::cli
