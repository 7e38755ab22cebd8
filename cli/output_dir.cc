// All-or-nothing output directories.
#include "cli/output_dir.h"

#include <unistd.h>

#include <system_error>

namespace stitch::cli {

namespace fs = std::filesystem;

Result<StagedOutputDirectory> StagedOutputDirectory::create(const fs::path& target) {
  fs::path absolute = fs::absolute(target).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  std::error_code error;
  if (fs::exists(absolute, error) && !fs::is_directory(absolute, error)) {
    return Status::invalid_input("output " + target.string() +
                                 " exists and is not a directory; pass a directory with -o");
  }
  fs::path parent = absolute.parent_path();
  fs::create_directories(parent, error);
  if (error) {
    return Status::invalid_input("cannot create " + parent.string() + ": " + error.message() +
                                 "; pass a writable directory with -o");
  }
  fs::path staging = parent / (absolute.filename().string() + ".stitchopt-tmp-" +
                               std::to_string(static_cast<long>(getpid())));
  fs::remove_all(staging, error);
  if (!fs::create_directory(staging, error) || error) {
    return Status::invalid_input("cannot create " + staging.string() + ": " + error.message() +
                                 "; pass a writable directory with -o");
  }
  return StagedOutputDirectory(absolute, staging);
}

StagedOutputDirectory::StagedOutputDirectory(StagedOutputDirectory&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::move(other.staging_)),
      committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object owns nothing any more
}

StagedOutputDirectory::~StagedOutputDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
}

Status StagedOutputDirectory::commit() {
  std::error_code error;
  if (fs::exists(target_, error)) {
    // Move the old directory aside first so the rename below is a single step.
    fs::path old = target_;
    old += ".stitchopt-old-" + std::to_string(static_cast<long>(getpid()));
    fs::rename(target_, old, error);
    if (error) {
      return Status::invalid_input("cannot replace " + target_.string() + ": " + error.message());
    }
    fs::rename(staging_, target_, error);
    if (error) {
      std::error_code restore_error;
      fs::rename(old, target_, restore_error);
      return Status::invalid_input("cannot write " + target_.string() + ": " + error.message());
    }
    fs::remove_all(old, error);
  } else {
    fs::rename(staging_, target_, error);
    if (error) {
      return Status::invalid_input("cannot write " + target_.string() + ": " + error.message());
    }
  }
  committed_ = true;
  return Status::ok();
}

}  // namespace stitch::cli
