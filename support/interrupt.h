// What stitchopt undoes when SIGINT, SIGTERM or SIGHUP ends it (DESIGN.md, Untrusted
// input): the directories it was writing (the staging directory beside OUT, an old
// output being replaced) are removed and the process groups of the tools it started
// (nvcc, the C++ compiler, dot) are killed; then the signal takes its default action,
// so the shell sees the usual status. The handler uses only async-signal-safe calls:
// the paths are kept in fixed buffers and removed with openat/getdents64/unlinkat.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace stitch::support {

// Installs the handlers (idempotent). Without this call nothing is undone.
void install_interrupt_cleanup();

// Slots for the directories to remove: at most kCleanupDirectories at a time. Paths
// must be absolute; an empty path clears the slot.
inline constexpr int kCleanupDirectories = 2;
void set_cleanup_directory(int slot, const std::string& absolute_path);

// Directories a run created (OUT and its missing parents), deepest first: removed
// when empty after the directories above. At most kMaxCreatedDirectories are kept;
// an empty list clears them.
inline constexpr int kMaxCreatedDirectories = 8;
void set_created_directories(const std::vector<std::string>& deepest_first);

// A child's process group to kill on interruption; unregister it once reaped.
void register_child_group(pid_t group);
void unregister_child_group(pid_t group);

}  // namespace stitch::support
