// Device memory planning by tensor lifetimes (Deep Fusion section 3.2).
//
// Every intermediate tensor of a program gets an offset in one arena; two tensors
// may share bytes only when their lifetimes (the steps from the one that writes a
// tensor to the last one that reads it, inclusive) do not overlap. Offsets come from
// greedy-by-size placement (the largest tensor first, each at the lowest aligned
// offset that does not collide with an already placed tensor whose lifetime
// overlaps), the scheme TensorFlow Lite's arena planner and ONNX Runtime's memory
// pattern planner use; it reaches the lower bound (the largest total of tensors live
// at one step) on chains and stays close to it on the bundled models.
//
// Weights (constants) and graph inputs are not planned here: they are uploaded once
// and live for the whole program. Graph outputs are planned with a lifetime up to the
// last step, so nothing overwrites them before they are read back.
#pragma once

#include <cstdint>
#include <vector>

namespace stitch::runtime {

struct BufferRequest {
  int64_t bytes = 0;       // 0 is allowed (gets offset 0 and takes no space)
  int32_t first_step = 0;  // the step that writes it
  int32_t last_step = 0;   // the last step that reads it (>= first_step)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;   // per request, a multiple of `alignment`
  int64_t arena_bytes = 0;        // the arena the offsets fit in
  int64_t naive_bytes = 0;        // one buffer per tensor: sum of aligned sizes
  int64_t lower_bound_bytes = 0;  // max over steps of the aligned bytes live at it
};

// Precondition: alignment is a power of two; first_step <= last_step.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, int64_t alignment = 256);

// True when no two requests with overlapping lifetimes overlap in bytes and every
// buffer fits in the arena (used by tests and checked by the executor in debug runs).
bool memory_plan_is_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace stitch::runtime
