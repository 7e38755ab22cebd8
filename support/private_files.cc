// Writing inside a directory someone else may have prepared (private_files.h).
#include "support/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "support/bounded_file.h"

namespace stitch::support {
namespace fs = std::filesystem;
namespace {

std::string errno_text() { return std::strerror(errno); }

// A temporary name beside `path` no other writer uses: this process and a counter.
fs::path temporary_name(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.parent_path() /
         ("." + path.filename().string() + ".tmp-" + std::to_string(static_cast<long>(getpid())) +
          "-" + std::to_string(counter.fetch_add(1)));
}

// Whether `path` is a regular file (not a link) holding exactly `text`.
bool holds(const fs::path& path, std::string_view text) {
  const fs::path parent = path.parent_path().empty() ? "." : path.parent_path();
  Result<std::string> bytes = read_regular_file_under(parent, path.filename(), text.size(), "file");
  return bytes.is_ok() && *bytes == text;
}

}  // namespace

Status write_file_atomically(const fs::path& path, std::string_view text, unsigned mode) {
  const fs::path temporary = temporary_name(path);
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                static_cast<mode_t>(mode));
  if (fd < 0) return Status::invalid_input("cannot write " + path.string() + ": " + errno_text());
  const bool written = write_all(fd, text);
  const bool closed = close(fd) == 0;
  if (!written || !closed || rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    unlink(temporary.c_str());
    return Status::invalid_input("cannot write " + path.string() + ": " + why);
  }
  return Status::ok();
}

Status write_file_if_different(const fs::path& path, std::string_view text) {
  if (holds(path, text)) return Status::ok();
  return write_file_atomically(path, text);
}

Status prepare_build_directory(const fs::path& directory, bool parent_must_be_real) {
  struct stat info {};
  if (parent_must_be_real) {
    const fs::path parent = directory.parent_path().empty() ? "." : directory.parent_path();
    if (lstat(parent.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
      return Status::invalid_input(parent.string() +
                                   " is a symbolic link; stitchopt writes its build products "
                                   "only inside the output directory: recompile the model into "
                                   "a new output directory");
    }
  }
  if (lstat(directory.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    // A link (or anything else) where the build directory belongs: the link goes,
    // never what it points to.
    if (unlink(directory.c_str()) != 0) {
      return Status::invalid_input("cannot replace " + directory.string() + ": " + errno_text());
    }
  }
  if (mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::invalid_input("cannot create " + directory.string() + ": " + errno_text());
  }
  std::error_code error;
  std::vector<fs::path> strays;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (lstat(it->path().c_str(), &info) != 0) continue;
    const bool plain_file = S_ISREG(info.st_mode) && info.st_nlink == 1;
    if (!plain_file && !S_ISDIR(info.st_mode)) strays.push_back(it->path());
  }
  if (error) {
    return Status::invalid_input("cannot read " + directory.string() + ": " + error.message());
  }
  for (const fs::path& stray : strays) {
    if (unlink(stray.c_str()) != 0 && errno != ENOENT) {
      return Status::invalid_input("cannot remove " + stray.string() +
                                   " (not a plain file stitchopt wrote): " + errno_text());
    }
  }
  return Status::ok();
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}

}  // namespace stitch::support
