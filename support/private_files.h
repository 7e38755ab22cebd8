// Writing inside a directory someone else may have prepared (DESIGN.md, Untrusted
// input: an output directory is checked, not trusted). `stitchopt run` and `profile`
// write build products, logs and profile.json into OUT, and OUT may come from
// elsewhere: a symbolic link planted at OUT/kernels/emu_build/stitch_emu.h, at a log
// or at profile.json.tmp must never make stitchopt write the file it points to, and a
// hard link must never make it change a file outside OUT.
//
// So every such write goes through these functions: a file is written to a fresh
// temporary name (O_CREAT | O_EXCL | O_NOFOLLOW: never an existing file or a link)
// and renamed over its path (rename replaces a link, never follows it), and a build
// directory is made a real directory holding only plain files before anything runs
// in it (links, FIFOs, devices and hard-linked files are removed, not followed).
//
// This protects against what was planted before the run. Someone who can write into
// OUT while stitchopt runs there can still race it; OUT must be the user's.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "ir/core/status.h"

namespace stitch::support {

// Writes `text` to `path` through a temporary file of the same directory and a
// rename: a reader sees the old file or the whole new one, and a link at `path` is
// replaced, not written through. `mode` is the new file's permission bits (before
// the umask).
Status write_file_atomically(const std::filesystem::path& path, std::string_view text,
                             unsigned mode = 0644);

// As write_file_atomically, but leaves `path` alone when it is a regular file (not a
// link) that already holds `text`, so that its mtime and what is stamped with it stay.
Status write_file_if_different(const std::filesystem::path& path, std::string_view text);

// Makes `directory` a real directory stitchopt can write in: when it is missing it
// is created (its parent must exist); when it is a symbolic link or not a
// directory, that entry is removed and a directory made in its place. Then every
// entry in it that is not a regular file or a directory, and every regular file with
// more than one hard link, is removed. `parent_must_be_real`: also refuse (an error
// saying why) when the parent directory is itself a symbolic link, e.g.
// OUT/kernels pointing elsewhere.
Status prepare_build_directory(const std::filesystem::path& directory, bool parent_must_be_real);

// Writes all of `bytes` to `fd` (retrying short writes and EINTR); false on an error.
bool write_all(int fd, std::string_view bytes);

}  // namespace stitch::support
