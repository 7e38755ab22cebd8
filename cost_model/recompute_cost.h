// Recompute or materialize: the cost the scheduler weighs when a cheap elementwise
// value read by several nodes of a global-composition group could be computed again
// at each read instead of written to the workspace behind a grid barrier (the
// scheduler's step 4, emit/schedule.h; AStitch 2.3.1 weighs the same choice).
//
// Recomputing costs, per extra read, the value's expression: `ops` arithmetic
// operations at the FP32 rate and `leaves` operand reads of
// calibration.recomputed_leaf_bytes each from L2. Materializing costs one grid
// barrier and the value written and read back once through L2.
//
// Example (H100 profile): 1M extra reads of a 2-op, 2-leaf expression cost
// 1e6 x (2 / 6.69e13 + 2 x 4 / 6.2e12) s = 1.32 us; materializing 4 MB costs
// 1.5 us + 2 x 4e6 / 6.2e12 s = 2.79 us, so the value is recomputed.
#pragma once

#include "cost_model/device_profile.h"

namespace stitch::cost_model {

struct RecomputeCost {
  double recompute_us = 0;    // every read beyond the first evaluates the expression
  double materialize_us = 0;  // a grid barrier, the value written and read once
  bool recompute_is_cheaper() const { return recompute_us < materialize_us; }
};

// `extra_reads`: element reads beyond the value's own elements (a GEMM reader reads
// each element k times); `bytes`: the value's size.
inline RecomputeCost recompute_cost(double extra_reads, int ops, int leaves, double bytes,
                                    const DeviceProfile& profile) {
  RecomputeCost cost;
  cost.recompute_us =
      extra_reads *
      (ops / profile.fp32_flops_per_second +
       leaves * profile.calibration.recomputed_leaf_bytes / profile.l2_bytes_per_second) *
      1e6;
  cost.materialize_us = profile.grid_barrier_us + 2 * bytes / profile.l2_bytes_per_second * 1e6;
  return cost;
}

}  // namespace stitch::cost_model
