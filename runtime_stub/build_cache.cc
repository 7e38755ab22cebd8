// The opt-in build cache (build_cache.h).
#include "runtime_stub/build_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <system_error>

#include "support/checksum.h"
#include "support/private_files.h"

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

// An entry file: this header, then the output's bytes, then the log's.
//   stitchopt build cache entry 2\n
//   checksum <16 hex digits: checksum64 of output + log>\n
//   sizes <output bytes> <log bytes>\n
constexpr std::string_view kMagic = "stitchopt build cache entry 2\n";

std::string checksum_hex(std::string_view bytes) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(support::checksum64(bytes)));
  return text;
}

std::string errno_text() { return std::strerror(errno); }

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The `size` bytes of the regular file behind `fd`, mapped read-only; null when they
// cannot be. The entry's file is replaced by rename, never rewritten in place, so the
// mapping stays whole while it is used.
std::shared_ptr<const void> map_file(int fd, size_t size) {
  void* address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED) return nullptr;
  return std::shared_ptr<const void>(
      address, [size](const void* mapped) { munmap(const_cast<void*>(mapped), size); });
}

// Why a file of the cache may not be trusted, or "" when it may: it must be the
// user's and writable by nobody else.
std::string untrusted_owner(const struct stat& info) {
  if (info.st_uid != geteuid()) {
    return "it belongs to user id " + std::to_string(info.st_uid) + ", not to you (" +
           std::to_string(geteuid()) + ")";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return "it is writable by group or others (mode " + mode_text(info.st_mode) + ")";
  }
  return "";
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device random;
  char text[64];
  std::snprintf(text, sizeof text, ".tmp-%ld-%u-%08x", static_cast<long>(getpid()),
                counter.fetch_add(1), random());
  return text;
}

}  // namespace

Result<BuildCache> BuildCache::open(const fs::path& directory) {
  const std::string shown = "the build cache " + directory.string() + " ($STITCH_BUILD_CACHE)";
  std::error_code error;
  if (!fs::exists(directory, error)) {
    if (!directory.parent_path().empty()) fs::create_directories(directory.parent_path(), error);
    if (mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::invalid_input("cannot create " + shown + ": " + errno_text());
    }
  }
  BuildCache cache;
  cache.directory_ = directory;
  cache.directory_fd_ = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cache.directory_fd_ < 0) {
    return Status::invalid_input("cannot open " + shown + ": " + errno_text());
  }
  struct stat info {};
  if (fstat(cache.directory_fd_, &info) != 0) {
    return Status::invalid_input("cannot read " + shown + ": " + errno_text());
  }
  if (std::string why = untrusted_owner(info); !why.empty()) {
    return Status::invalid_input(
        shown + " may not be used: " + why +
        ", and whoever can write there could run code as you; make it a directory of yours "
        "that only you can write (chmod 700), or unset STITCH_BUILD_CACHE");
  }
  return cache;
}

BuildCache::BuildCache(BuildCache&& other) noexcept
    : directory_(std::move(other.directory_)), directory_fd_(other.directory_fd_) {
  other.directory_fd_ = -1;
}

BuildCache& BuildCache::operator=(BuildCache&& other) noexcept {
  if (this != &other) {
    if (directory_fd_ >= 0) close(directory_fd_);
    directory_ = std::move(other.directory_);
    directory_fd_ = other.directory_fd_;
    other.directory_fd_ = -1;
  }
  return *this;
}

BuildCache::~BuildCache() {
  if (directory_fd_ >= 0) close(directory_fd_);
}

Result<std::optional<BuildCacheEntry>> BuildCache::lookup(const std::string& name) const {
  const std::string shown = "build cache entry " + (directory_ / name).string();
  int fd = openat(directory_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<BuildCacheEntry>();
    return Status::invalid_input(shown + " cannot be opened (" + errno_text() +
                                 "; a symbolic link?)");
  }
  struct stat info {};
  std::shared_ptr<const void> mapping;
  std::string why;
  if (fstat(fd, &info) != 0) {
    why = errno_text();
  } else if (!S_ISREG(info.st_mode)) {
    why = "it is not a regular file";
  } else if (std::string owner = untrusted_owner(info); !owner.empty()) {
    why = owner;
  } else if (static_cast<uint64_t>(info.st_size) > kMaxBuildCacheEntryBytes + 4096) {
    why = "it is larger than any entry stitchopt writes";
  } else if (info.st_size == 0) {
    why = "it is empty";
  } else if (mapping = map_file(fd, static_cast<size_t>(info.st_size)); mapping == nullptr) {
    why = "it cannot be read (" + errno_text() + ")";
  }
  close(fd);
  if (!why.empty()) return Status::invalid_input(shown + " is not used: " + why);

  // The header, then exactly the payload it describes.
  std::string_view rest(static_cast<const char*>(mapping.get()), static_cast<size_t>(info.st_size));
  auto take_line = [&rest](std::string_view prefix, std::string_view& value) {
    if (!rest.starts_with(prefix)) return false;
    const size_t end = rest.find('\n');
    if (end == std::string_view::npos) return false;
    value = rest.substr(prefix.size(), end - prefix.size());
    rest.remove_prefix(end + 1);
    return true;
  };
  std::string_view magic, digest, sizes;
  unsigned long long output_size = 0, log_size = 0;
  int consumed = 0;
  const bool parsed = take_line(kMagic.substr(0, kMagic.size() - 1), magic) && magic.empty() &&
                      take_line("checksum ", digest) && take_line("sizes ", sizes) &&
                      std::sscanf(std::string(sizes).c_str(), "%llu %llu%n", &output_size,
                                  &log_size, &consumed) == 2 &&
                      static_cast<size_t>(consumed) == sizes.size() && output_size <= rest.size() &&
                      log_size == rest.size() - output_size;
  if (!parsed) {
    return Status::invalid_input(shown +
                                 " is not used: its header is not a stitchopt cache "
                                 "entry's, or its size does not match (a truncated "
                                 "write?)");
  }
  if (checksum_hex(rest) != digest) {
    return Status::invalid_input(shown +
                                 " is not used: its content does not match the checksum "
                                 "recorded when it was filled");
  }
  BuildCacheEntry entry;
  entry.output = rest.substr(0, output_size);
  entry.log = rest.substr(output_size);
  entry.storage = std::move(mapping);
  return std::optional<BuildCacheEntry>(std::move(entry));
}

Status BuildCache::store(const std::string& name, std::string_view output,
                         std::string_view log) const {
  if (output.size() + log.size() > kMaxBuildCacheEntryBytes) {
    return Status::invalid_input((directory_ / name).string() + ": not cached, larger than " +
                                 std::to_string(kMaxBuildCacheEntryBytes) + " bytes");
  }
  std::string payload;
  payload.reserve(output.size() + log.size());
  payload.append(output).append(log);
  const std::string header = std::string(kMagic) + "checksum " + checksum_hex(payload) +
                             "\nsizes " + std::to_string(output.size()) + " " +
                             std::to_string(log.size()) + "\n";
  const std::string temporary = name + unique_suffix();
  int fd = openat(directory_fd_, temporary.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::invalid_input("cannot write " + (directory_ / temporary).string() + ": " +
                                 errno_text());
  }
  const bool written = support::write_all(fd, header) && support::write_all(fd, payload);
  const bool closed = close(fd) == 0;
  if (!written || !closed ||
      renameat(directory_fd_, temporary.c_str(), directory_fd_, name.c_str()) != 0) {
    const std::string why = errno_text();
    unlinkat(directory_fd_, temporary.c_str(), 0);
    return Status::invalid_input("cannot write " + (directory_ / name).string() + ": " + why);
  }
  return Status::ok();
}

}  // namespace stitch::runtime
