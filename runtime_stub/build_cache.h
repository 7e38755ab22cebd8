// The opt-in build cache ($STITCH_BUILD_CACHE, docs/runtime.md "Build cache"): build
// steps that do not depend on the program (the emulation layer's object, its
// precompiled header) kept by a key of their inputs, so that another output
// directory copies them instead of compiling them again.
//
// What it holds is code stitchopt links and runs, so the cache is a place only its
// user may write (docs/testing.md, "Threat model"):
//   - The directory must be owned by the user and not writable by group or others;
//     a missing one is created with mode 0700. Otherwise open() says why and the
//     build runs without the cache: a cache only saves time, so it never stops a run.
//   - An entry is one file: a header with the checksum (support/checksum.h, XXH64)
//     and sizes of its payload (the step's output, then its compiler log), written
//     at fill and checked at every restore. The checksum finds a corrupt or
//     truncated entry; it is no defence against a forger, which the ownership and
//     mode checks are (a SHA-256 of a 60 MB header took longer than the compile it
//     saves). It must be a regular file of the user's, not writable by others, and
//     is read through a descriptor opened without following links; a broken entry
//     (truncated, corrupt, a link, a FIFO, someone else's) is reported, ignored and
//     rebuilt, never used.
//   - A fill writes a fresh temporary file inside the cache directory (O_CREAT |
//     O_EXCL | O_NOFOLLOW, so a planted link fails it) and renames it into place.
//   - All of it goes through one descriptor of the directory opened at open(), so
//     renaming the directory away later cannot redirect a read or a write.
// The key is the caller's: it must cover every input the step reads
// (runtime_stub/kernel_library.cc: the command line, the headers, the compiler).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ir/core/status.h"

namespace stitch::runtime {

// One restored entry: the step's output and its compiler log, viewing the entry file
// mapped into memory (a 60 MB precompiled header is not copied to be checked), which
// `storage` keeps mapped.
struct BuildCacheEntry {
  std::string_view output;
  std::string_view log;
  std::shared_ptr<const void> storage;
};

// Largest payload an entry may hold (a precompiled header of the emulation layer is
// about 40 MB with -g).
inline constexpr size_t kMaxBuildCacheEntryBytes = size_t{1} << 30;

class BuildCache {
 public:
  // Opens the cache at `directory` (creating it, mode 0700, when missing); an error
  // naming the directory and how to fix it when it may not be used.
  static Result<BuildCache> open(const std::filesystem::path& directory);
  BuildCache(BuildCache&& other) noexcept;
  BuildCache& operator=(BuildCache&& other) noexcept;
  BuildCache(const BuildCache&) = delete;
  ~BuildCache();

  const std::filesystem::path& directory() const { return directory_; }

  // The entry `name` (a file name: no '/'): nothing when absent; an error saying
  // what is wrong with it when it is present but broken (the caller rebuilds).
  Result<std::optional<BuildCacheEntry>> lookup(const std::string& name) const;

  // Stores `output` and `log` as `name`, replacing what was there.
  Status store(const std::string& name, std::string_view output, std::string_view log) const;

 private:
  BuildCache() = default;
  std::filesystem::path directory_;
  int directory_fd_ = -1;
};

}  // namespace stitch::runtime
