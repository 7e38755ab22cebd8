// Shared-memory planning for one kernel: FusionStitching Algorithm 4 with AStitch's
// "regional to global" fallback (section 4.4).
//
// Inputs are the kernel's shared-memory requests in the group's data-flow
// (topological) order: for each, the position of the op that writes it, the
// position of its last reader and its size. A request reuses the slot of an earlier
// allocation when
//   (a) that allocation is dead: its last reader comes strictly before the new
//       writer (so no thread still reads what is being overwritten), and
//   (b) the new writer dominates it in the group's data flow (FS: Dominates(inst,
//       prev_inst); on a data-flow graph with edges producer -> consumer this is
//       post-dominance: every path from the earlier op to the group's outputs passes
//       through the new one, so the earlier value is never needed again);
// the first such slot (lowest offset) is taken and grows to the larger size.
// Otherwise a new slot is appended. Slots are 16-byte aligned and laid out in order.
// requested_bytes sums every request (aligned, no reuse); allocated_bytes is the
// arena after reuse. When allocated_bytes exceeds the limit, the largest request
// (the latest among equal sizes) moves to global memory and the plan is redone,
// until it fits; `fallback` then reads "regional to global".
//
// Worked example (limit 48 KiB): requests in order
//   a: pos 0, last use 1, 4096 B;  b: pos 1, last use 2, 4096 B;
//   c: pos 2, last use 3, 8192 B, and c dominates a
// a -> slot 0 [0, 4096); b -> slot 1 [4096, 8192) (a is still read at 1); c reuses
// slot 0 (a dead since 1 < 2, dominated), which grows to 8192, so b moves to
// [8192, 12288): offsets a = 0, b = 8192, c = 0; requested 16384, allocated 12288.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stitch::emit {

struct SharedMemoryRequest {
  std::string name;  // the value, for the kernel comment and tests
  int position = 0;  // topological position of the op writing it
  int last_use = 0;  // topological position of its last reader (>= position)
  int64_t bytes = 0;
};

struct SharedMemoryAllocation {
  bool in_shared = true;  // false: moved to the global workspace
  int slot = -1;
  int64_t offset = 0;  // bytes into the arena (when in_shared)
};

struct SharedMemoryPlan {
  std::vector<SharedMemoryAllocation> allocations;  // one per request, same order
  int64_t requested_bytes = 0;
  int64_t allocated_bytes = 0;
  std::string fallback;  // "" or "regional to global"
};

inline constexpr int64_t kSharedAlignment = 16;

// `dominates(later, earlier)`: request `later`'s op dominates request `earlier`'s op
// (indices into `requests`). Precondition: requests sorted by position.
SharedMemoryPlan plan_shared_memory(const std::vector<SharedMemoryRequest>& requests,
                                    const std::function<bool(size_t, size_t)>& dominates,
                                    int64_t limit_bytes);

}  // namespace stitch::emit
