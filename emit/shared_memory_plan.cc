// Shared-memory planning (see shared_memory_plan.h).
#include "emit/shared_memory_plan.h"

#include <algorithm>

#include "ir/core/status.h"

namespace stitch::emit {
namespace {

int64_t align_up(int64_t bytes) {
  return (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
}

// One pass of Algorithm 4 over the requests still in shared memory.
void assign_slots(const std::vector<SharedMemoryRequest>& requests,
                  const std::function<bool(size_t, size_t)>& dominates, SharedMemoryPlan& plan) {
  std::vector<int64_t> slot_bytes;
  std::vector<size_t> slot_owner;  // the request currently holding each slot
  for (size_t i = 0; i < requests.size(); ++i) {
    SharedMemoryAllocation& allocation = plan.allocations[i];
    if (!allocation.in_shared) continue;
    allocation.slot = -1;
    for (size_t slot = 0; slot < slot_bytes.size(); ++slot) {
      size_t owner = slot_owner[slot];
      if (requests[owner].last_use < requests[i].position && dominates(i, owner)) {
        allocation.slot = static_cast<int>(slot);
        break;
      }
    }
    int64_t bytes = align_up(requests[i].bytes);
    if (allocation.slot < 0) {
      allocation.slot = static_cast<int>(slot_bytes.size());
      slot_bytes.push_back(bytes);
      slot_owner.push_back(i);
    } else {
      auto slot = static_cast<size_t>(allocation.slot);
      slot_bytes[slot] = std::max(slot_bytes[slot], bytes);
      slot_owner[slot] = i;
    }
  }
  std::vector<int64_t> slot_offset(slot_bytes.size(), 0);
  int64_t total = 0;
  for (size_t slot = 0; slot < slot_bytes.size(); ++slot) {
    slot_offset[slot] = total;
    total += slot_bytes[slot];
  }
  for (SharedMemoryAllocation& allocation : plan.allocations) {
    if (allocation.in_shared) allocation.offset = slot_offset[static_cast<size_t>(allocation.slot)];
  }
  plan.allocated_bytes = total;
}

}  // namespace

SharedMemoryPlan plan_shared_memory(const std::vector<SharedMemoryRequest>& requests,
                                    const std::function<bool(size_t, size_t)>& dominates,
                                    int64_t limit_bytes) {
  SharedMemoryPlan plan;
  plan.allocations.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    STITCH_CHECK(i == 0 || requests[i - 1].position <= requests[i].position)
        << "shared-memory requests must be in topological order";
    STITCH_CHECK(requests[i].last_use >= requests[i].position) << "request " << requests[i].name;
    plan.requested_bytes += align_up(requests[i].bytes);
  }
  assign_slots(requests, dominates, plan);
  while (plan.allocated_bytes > limit_bytes) {
    size_t largest = requests.size();
    for (size_t i = 0; i < requests.size(); ++i) {
      if (!plan.allocations[i].in_shared) continue;
      if (largest == requests.size() || requests[i].bytes >= requests[largest].bytes) largest = i;
    }
    STITCH_CHECK(largest < requests.size()) << "nothing left to move out of shared memory";
    plan.allocations[largest] = SharedMemoryAllocation{false, -1, 0};
    plan.fallback = "regional to global";
    assign_slots(requests, dominates, plan);
  }
  return plan;
}

}  // namespace stitch::emit
