#include "runtime_stub/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "ir/core/status.h"

namespace stitch::runtime {
namespace {

int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, int64_t alignment) {
  STITCH_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0) << "alignment " << alignment;
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  int32_t last_step = 0;
  for (const BufferRequest& request : requests) {
    STITCH_CHECK(request.first_step <= request.last_step && request.bytes >= 0)
        << "buffer request [" << request.first_step << ", " << request.last_step << "]";
    plan.naive_bytes += align_up(request.bytes, alignment);
    last_step = std::max(last_step, request.last_step);
  }
  // Lower bound: the most bytes live at one step (difference array over steps).
  std::vector<int64_t> delta(static_cast<size_t>(last_step) + 2, 0);
  for (const BufferRequest& request : requests) {
    delta[static_cast<size_t>(request.first_step)] += align_up(request.bytes, alignment);
    delta[static_cast<size_t>(request.last_step) + 1] -= align_up(request.bytes, alignment);
  }
  int64_t live = 0;
  for (int64_t change : delta) {
    live += change;
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live);
  }

  // Greedy by size: largest first (ties: earlier first step, then index, so the plan
  // is deterministic); each goes to the lowest offset where it fits between the
  // already placed buffers whose lifetimes overlap its own.
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    if (requests[a].first_step != requests[b].first_step) {
      return requests[a].first_step < requests[b].first_step;
    }
    return a < b;
  });
  std::vector<size_t> placed;  // kept sorted by offset
  for (size_t index : order) {
    const BufferRequest& request = requests[index];
    int64_t size = align_up(request.bytes, alignment);
    if (size == 0) continue;
    int64_t offset = 0;
    for (size_t other : placed) {  // ascending offsets
      const BufferRequest& other_request = requests[other];
      if (!lifetimes_overlap(request, other_request)) continue;
      int64_t other_offset = plan.offsets[other];
      int64_t other_end = other_offset + align_up(other_request.bytes, alignment);
      if (offset + size <= other_offset) break;  // the gap before `other` fits
      offset = std::max(offset, other_end);
    }
    plan.offsets[index] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    placed.insert(
        std::upper_bound(placed.begin(), placed.end(), index,
                         [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; }),
        index);
  }
  return plan;
}

bool memory_plan_is_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  if (plan.offsets.size() != requests.size()) return false;
  for (size_t a = 0; a < requests.size(); ++a) {
    if (plan.offsets[a] < 0 || plan.offsets[a] + requests[a].bytes > plan.arena_bytes) return false;
    for (size_t b = a + 1; b < requests.size(); ++b) {
      if (requests[a].bytes == 0 || requests[b].bytes == 0) continue;
      if (!lifetimes_overlap(requests[a], requests[b])) continue;
      bool disjoint = plan.offsets[a] + requests[a].bytes <= plan.offsets[b] ||
                      plan.offsets[b] + requests[b].bytes <= plan.offsets[a];
      if (!disjoint) return false;
    }
  }
  return true;
}

}  // namespace stitch::runtime
