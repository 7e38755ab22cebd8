// Bounded, regular-file-only reads (see bounded_file.h).
#include "support/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace stitch::support {
namespace fs = std::filesystem;
namespace {

// Closes the descriptor it holds.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

// "64 MiB (67108864 bytes)", "1000 bytes".
std::string limit_text(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  constexpr size_t kKiB = size_t{1} << 10;
  const std::string exact = std::to_string(bytes) + " bytes";
  if (bytes >= kMiB && bytes % kMiB == 0) {
    return std::to_string(bytes / kMiB) + " MiB (" + exact + ")";
  }
  if (bytes >= kKiB && bytes % kKiB == 0) {
    return std::to_string(bytes / kKiB) + " KiB (" + exact + ")";
  }
  return exact;
}

Status too_large(const fs::path& path, std::string_view what, size_t size, size_t max_bytes) {
  return Status::invalid_input(path.string() + ": the " + std::string(what) + " is " +
                               std::to_string(size) + " bytes, more than the " +
                               limit_text(max_bytes) + " a " + std::string(what) + " may have");
}

Status cannot_open(const fs::path& path, std::string_view what, int error) {
  return Status::invalid_input(path.string() + ": cannot open the " + std::string(what) + ": " +
                               std::strerror(error));
}

// Reads the whole of the open `fd` when it is a regular file of at most max_bytes.
Result<std::string> read_descriptor(int fd, const fs::path& path, size_t max_bytes,
                                    std::string_view what) {
  STITCH_CHECK(max_bytes < std::numeric_limits<size_t>::max()) << "no limit for " << path;
  struct stat info {};
  if (::fstat(fd, &info) != 0) return cannot_open(path, what, errno);
  if (!S_ISREG(info.st_mode)) {
    return Status::invalid_input(path.string() + ": the " + std::string(what) + " is " +
                                 kind_of(info.st_mode) + ", not a regular file");
  }
  const auto size = static_cast<size_t>(std::max<off_t>(info.st_size, 0));
  if (size > max_bytes) return too_large(path, what, size, max_bytes);
  std::string bytes;
  bytes.reserve(size);
  char buffer[1 << 16];
  // One byte past the limit tells a file that grew since fstat from one that did not.
  while (bytes.size() <= max_bytes) {
    const size_t want = std::min(sizeof(buffer), max_bytes + 1 - bytes.size());
    const ssize_t got = ::read(fd, buffer, want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return Status::invalid_input(path.string() + ": cannot read the " + std::string(what) + ": " +
                                   std::strerror(errno));
    }
    if (got == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(got));
  }
  return Status::invalid_input(path.string() + ": the " + std::string(what) + " grew past the " +
                               limit_text(max_bytes) + " a " + std::string(what) +
                               " may have while it was read");
}

constexpr int kFileFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

}  // namespace

Result<std::string> read_regular_file(const fs::path& path, size_t max_bytes,
                                      std::string_view what) {
  Descriptor file(::open(path.c_str(), kFileFlags));
  if (!file.is_open()) return cannot_open(path, what, errno);
  return read_descriptor(file.get(), path, max_bytes, what);
}

Result<std::string> read_regular_file_under(const fs::path& root, const fs::path& relative,
                                            size_t max_bytes, std::string_view what) {
  std::vector<fs::path> components;
  for (const fs::path& part : relative) {
    STITCH_CHECK(part != ".." && part != "/") << "not a path below its root: " << relative;
    if (part != "." && !part.empty()) components.push_back(part);
  }
  STITCH_CHECK(!components.empty()) << "no file named in " << relative;
  const fs::path path = root / relative;
  Descriptor directory(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory.is_open()) return cannot_open(path, what, errno);
  fs::path reached = root;
  for (size_t i = 0; i < components.size(); ++i) {
    reached /= components[i];
    const bool last = i + 1 == components.size();
    const int flags = O_NOFOLLOW | (last ? kFileFlags : O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    Descriptor opened(::openat(directory.get(), components[i].c_str(), flags));
    if (!opened.is_open()) {
      const int error = errno;
      struct stat info {};
      if (::fstatat(directory.get(), components[i].c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(info.st_mode)) {
        return Status::invalid_input(
            path.string() + ": the " + std::string(what) +
            (last ? std::string(" is a symbolic link")
                  : " is reached through the symbolic link " + reached.string()) +
            "; stitchopt does not follow links inside an output directory");
      }
      return cannot_open(path, what, error);
    }
    directory = std::move(opened);
  }
  // `directory` now holds the file itself.
  return read_descriptor(directory.get(), path, max_bytes, what);
}

}  // namespace stitch::support
