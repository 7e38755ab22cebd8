// The output directory of `stitchopt MODEL -o OUT` (output_dir.h).
#include "cli/output_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include "support/interrupt.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kStagingSlot = 0;
constexpr int kOldOutputSlot = 1;

// True when `inner` is `outer` or lies below it (both absolute and normal).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto [outer_end, inner_at] =
      std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return outer_end == outer.end();
}

fs::path absolute_normal(const fs::path& path) {
  fs::path absolute = fs::absolute(path).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  return absolute;
}

// The real path of an existing path, else the path itself made absolute.
fs::path real_path(const fs::path& path) {
  std::error_code error;
  fs::path real = fs::canonical(path, error);
  return error ? absolute_normal(path) : real;
}

// Whether report.json in `directory` is a stitchopt report (its "schema" field),
// read without a JSON library: the schema is the first key stitchopt writes.
bool has_stitchopt_report(const fs::path& directory) {
  fs::path report = directory / "report.json";
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(report, error))) return false;
  std::ifstream file(report, std::ios::binary);
  std::string head(256, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(file.gcount()));
  static const std::regex kSchema(R"(^\{\s*"schema"\s*:\s*"stitchopt\.report/\d+")");
  return std::regex_search(head, kSchema);
}

// The entries of `directory`, sorted (messages name the first foreign one).
std::vector<fs::directory_entry> sorted_entries(const fs::path& directory, std::error_code& error) {
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    entries.push_back(*it);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

// The first entry of a kernels directory (KERNELS) that stitchopt does not write
// there, as "SHOWN/name", or "".
std::string first_foreign_kernel_entry(const fs::path& kernels, const std::string& shown) {
  static const std::set<std::string> kKernelFiles = {"kernels.h", "kernels.json", "CMakeLists.txt",
                                                     "stitch_prelude.cuh"};
  // Build products of `stitchopt run` and `profile` (host emulation, nvcc) inside kernels/.
  static const std::set<std::string> kKernelBuildDirectories = {"emu_build", "emu_counters_build",
                                                                "build"};
  static const std::regex kKernelSource(R"([A-Za-z0-9_]+\.cu)");
  std::error_code error;
  for (const fs::directory_entry& inner : sorted_entries(kernels, error)) {
    const std::string inner_name = inner.path().filename().string();
    fs::file_status inner_status = inner.symlink_status(error);
    bool ours = fs::is_regular_file(inner_status)
                    ? kKernelFiles.count(inner_name) || std::regex_match(inner_name, kKernelSource)
                    : fs::is_directory(inner_status) && kKernelBuildDirectories.count(inner_name);
    if (!ours) return shown + "/" + inner_name;
  }
  if (error) return shown + " (unreadable: " + error.message() + ")";
  return "";
}

// The first entry of `directory` that stitchopt does not write there (relative
// path), or "" when the directory is an earlier stitchopt output.
std::string first_foreign_entry(const fs::path& directory) {
  if (!has_stitchopt_report(directory))
    return "report.json with the stitchopt report schema is missing";
  static const std::set<std::string> kFiles = {
      "model.fused.onnx", "model.fused.onnx.data", "report.json", "device.json", "plan.dot",
      "plan.svg",         "profile.json"};
  static const std::regex kIrDump(R"([0-9]+-[A-Za-z0-9_-]+\.ir)");
  std::error_code error;
  for (const fs::directory_entry& entry : sorted_entries(directory, error)) {
    const std::string name = entry.path().filename().string();
    fs::file_status status = entry.symlink_status(error);
    if (fs::is_symlink(status)) return name + " (a symbolic link)";
    if (kFiles.count(name) && fs::is_regular_file(status)) continue;
    if (name == "kernels" && fs::is_directory(status)) {
      if (std::string foreign = first_foreign_kernel_entry(entry.path(), name); !foreign.empty()) {
        return foreign;
      }
      continue;
    }
    if (name == "ir" && fs::is_directory(status)) {
      for (const fs::directory_entry& inner : sorted_entries(entry.path(), error)) {
        const std::string inner_name = inner.path().filename().string();
        fs::file_status inner_status = inner.symlink_status(error);
        if (!fs::is_regular_file(inner_status) || !std::regex_match(inner_name, kIrDump)) {
          return name + "/" + inner_name;
        }
      }
      if (error) return name + " (unreadable: " + error.message() + ")";
      continue;
    }
    // `--score emulated`'s probe outputs, one per timing round: score/N/, each a
    // model and its kernels.
    if (name == "score" && fs::is_directory(status)) {
      static const std::regex kRound("[0-9]+");
      for (const fs::directory_entry& round : sorted_entries(entry.path(), error)) {
        const std::string round_name = round.path().filename().string();
        const std::string shown = name + "/" + round_name;
        if (!std::regex_match(round_name, kRound) ||
            !fs::is_directory(round.symlink_status(error))) {
          return shown;
        }
        for (const fs::directory_entry& inner : sorted_entries(round.path(), error)) {
          const std::string inner_name = inner.path().filename().string();
          fs::file_status inner_status = inner.symlink_status(error);
          if (inner_name == "model.fused.onnx" && fs::is_regular_file(inner_status)) continue;
          if (inner_name == "kernels" && fs::is_directory(inner_status)) {
            std::string foreign = first_foreign_kernel_entry(inner.path(), shown + "/kernels");
            if (!foreign.empty()) return foreign;
            continue;
          }
          return shown + "/" + inner_name;
        }
      }
      if (error) return name + " (unreadable: " + error.message() + ")";
      continue;
    }
    return name;
  }
  if (error) return "(unreadable: " + error.message() + ")";
  return "";
}

// Removes what runs into `target` left beside it when they were killed (SIGKILL
// leaves no chance to clean up): "TARGET.stitchopt-tmp-<pid>" staging directories
// holding stitchopt's marker, and "TARGET.stitchopt-old-<pid>" earlier outputs being
// replaced, both of the user's and only when process <pid> is gone. Called with
// TARGET's lock held, so no live run into TARGET owns them.
void sweep_stale_staging(const fs::path& target) {
  static const std::regex kLeftover(R"(\.stitchopt-(tmp|old)-([0-9]{1,9}))");
  const std::string prefix = target.filename().string();
  std::error_code error;
  for (const fs::directory_entry& entry : sorted_entries(target.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    const std::string suffix = name.size() > prefix.size() ? name.substr(prefix.size()) : "";
    if (!name.starts_with(prefix) || !std::regex_match(suffix, match, kLeftover)) continue;
    struct stat info {};
    if (lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != geteuid()) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(match[2].str()));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const bool ours =
        match[1] == "tmp"
            ? fs::is_regular_file(fs::symlink_status(entry.path() / kStagingMarker, error))
            : first_foreign_entry(entry.path()).empty();
    if (ours) fs::remove_all(entry.path(), error);
  }
}

}  // namespace

Status check_output_directory(const fs::path& target, const OutputDirectoryOptions& options) {
  const std::string shown = "-o " + target.string();
  const fs::path absolute = absolute_normal(target);
  std::error_code error;
  fs::file_status status = fs::symlink_status(absolute, error);
  if (!fs::exists(status)) return Status::ok();
  const fs::path resolved = real_path(absolute);
  if (!fs::is_directory(resolved, error)) {
    return Status::invalid_input("output " + target.string() +
                                 " exists and is not a directory; pass a directory with -o");
  }
  // Refused even with --force: replacing these would delete the user's work.
  if (resolved == resolved.root_path()) {
    return Status::invalid_input(shown + " is the root directory; pass a directory of its own");
  }
  if (is_within(real_path(fs::current_path(error)), resolved)) {
    return Status::invalid_input(shown +
                                 " is the working directory or holds it, and stitchopt "
                                 "replaces its output directory as a whole; pass a directory of "
                                 "its own, e.g. -o out");
  }
  if (const char* home = std::getenv("HOME");
      home != nullptr && *home != '\0' && is_within(real_path(home), resolved)) {
    return Status::invalid_input(shown +
                                 " is your home directory or holds it, and stitchopt "
                                 "replaces its output directory as a whole; pass a directory of "
                                 "its own");
  }
  for (const fs::path& file : options.protected_files) {
    if (is_within(real_path(file), resolved)) {
      return Status::invalid_input(shown + " holds " + file.string() +
                                   ", an input of this run, and stitchopt replaces its output "
                                   "directory as a whole; pass a directory of its own");
    }
  }
  std::vector<fs::directory_entry> entries = sorted_entries(resolved, error);
  if (error) {
    return Status::invalid_input("cannot read " + target.string() + ": " + error.message() +
                                 "; pass a readable directory with -o");
  }
  if (entries.empty() || options.force) return Status::ok();
  std::string foreign = first_foreign_entry(resolved);
  if (foreign.empty()) return Status::ok();
  return Status::invalid_input(
      shown + " is not empty and is not an earlier stitchopt output (" + foreign +
      "); stitchopt replaces its output directory as a whole, "
      "so pass a new or empty directory, or --force to delete what it holds");
}

Result<StagedOutputDirectory> StagedOutputDirectory::create(const fs::path& target,
                                                            const OutputDirectoryOptions& options) {
  STITCH_RETURN_IF_ERROR(check_output_directory(target, options));
  support::install_interrupt_cleanup();
  StagedOutputDirectory staged;
  std::error_code error;
  const fs::path absolute = absolute_normal(target);
  // OUT and its missing parents are made now (OUT to hold the lock) and removed
  // again if the run fails.
  std::vector<fs::path> missing;
  for (fs::path path = absolute; !path.empty() && !fs::exists(fs::symlink_status(path, error));
       path = path.parent_path()) {
    missing.push_back(path);
    if (path == path.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, error) && error) {
      return Status::invalid_input("cannot create " + it->string() + ": " + error.message() +
                                   "; pass a writable directory with -o");
    }
    staged.created_.push_back(*it);
  }
  staged.target_ = real_path(absolute);
  staged.lock_fd_ = open(staged.target_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (staged.lock_fd_ < 0) {
    return Status::invalid_input("cannot open " + target.string() + ": " + std::strerror(errno) +
                                 "; pass a writable directory with -o");
  }
  if (flock(staged.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::invalid_input("-o " + target.string() +
                                 ": another stitchopt is using this directory (a compile into "
                                 "it, or run, bench or profile of it); wait for it to finish or "
                                 "pass another directory");
  }
  // A run that held the lock until just now may have replaced OUT: check it again.
  STITCH_RETURN_IF_ERROR(check_output_directory(staged.target_, options));
  sweep_stale_staging(staged.target_);
  staged.staging_ =
      staged.target_.parent_path() / (staged.target_.filename().string() + ".stitchopt-tmp-" +
                                      std::to_string(static_cast<long>(getpid())));
  fs::remove_all(staged.staging_, error);
  if (!fs::create_directory(staged.staging_, error) || error) {
    return Status::invalid_input("cannot create " + staged.staging_.string() + ": " +
                                 error.message() +
                                 "; pass a directory whose parent is writable with -o");
  }
  support::set_cleanup_directory(kStagingSlot, staged.staging_.string());
  std::ofstream(staged.staging_ / kStagingMarker) << getpid() << "\n";
  std::vector<std::string> created;
  for (auto it = staged.created_.rbegin(); it != staged.created_.rend(); ++it)
    created.push_back(it->string());
  support::set_created_directories(created);
  return staged;
}

StagedOutputDirectory::StagedOutputDirectory(StagedOutputDirectory&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::move(other.staging_)),
      created_(std::move(other.created_)),
      lock_fd_(other.lock_fd_),
      committed_(other.committed_) {
  other.lock_fd_ = -1;
  other.created_.clear();
  other.staging_.clear();
}

StagedOutputDirectory::~StagedOutputDirectory() {
  std::error_code ignored;
  if (!committed_) {
    if (!staging_.empty()) fs::remove_all(staging_, ignored);
    // Only directories this run made, deepest first, and only while still empty.
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ignored);
  }
  if (!staging_.empty()) {
    support::set_cleanup_directory(kStagingSlot, "");
    support::set_created_directories({});
  }
  if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock
}

Status StagedOutputDirectory::commit() {
  std::error_code error;
  fs::remove(staging_ / kStagingMarker, error);
  // Move the old directory aside first so that OUT is replaced in one rename.
  fs::path old = target_;
  old += ".stitchopt-old-" + std::to_string(static_cast<long>(getpid()));
  support::set_cleanup_directory(kOldOutputSlot, old.string());
  fs::rename(target_, old, error);
  if (error) {
    support::set_cleanup_directory(kOldOutputSlot, "");
    return Status::invalid_input("cannot replace " + target_.string() + ": " + error.message());
  }
  fs::rename(staging_, target_, error);
  if (error) {
    std::error_code restore_error;
    fs::rename(old, target_, restore_error);
    support::set_cleanup_directory(kOldOutputSlot, "");
    return Status::invalid_input("cannot write " + target_.string() + ": " + error.message());
  }
  committed_ = true;
  support::set_cleanup_directory(kStagingSlot, "");
  support::set_created_directories({});
  fs::remove_all(old, error);
  support::set_cleanup_directory(kOldOutputSlot, "");
  return Status::ok();
}

Result<OutputDirectoryUse> OutputDirectoryUse::acquire(const fs::path& out_dir) {
  support::install_interrupt_cleanup();
  for (bool said = false;;) {
    OutputDirectoryUse use;
    use.lock_fd_ = open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (use.lock_fd_ < 0) {
      return Status::invalid_input(out_dir.string() + ": " + std::strerror(errno) +
                                   "; give the directory stitchopt MODEL -o DIR wrote");
    }
    if (flock(use.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      if (!said) {
        std::fprintf(stderr, "stitchopt: waiting for another stitchopt using %s\n",
                     out_dir.c_str());
        said = true;
      }
      while (flock(use.lock_fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
    // A compile that held the lock may have replaced OUT meanwhile: then the lock is
    // on the old directory, and the new one is locked again.
    struct stat locked {
    }, current{};
    if (fstat(use.lock_fd_, &locked) == 0 && stat(out_dir.c_str(), &current) == 0 &&
        locked.st_dev == current.st_dev && locked.st_ino == current.st_ino) {
      return use;
    }
  }
}

OutputDirectoryUse::OutputDirectoryUse(OutputDirectoryUse&& other) noexcept
    : lock_fd_(other.lock_fd_) {
  other.lock_fd_ = -1;
}

OutputDirectoryUse::~OutputDirectoryUse() {
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace stitch::cli
