// The charges of a kernel as emitted: what the code generator makes of a group beyond
// its bytes and work, as counts (never times), so that the analytic estimate prices
// them when the kernel is planned (cost_model::KernelShape is this type) and again
// from kernels.json later (the profile), on any device profile. emit::kernel_shape
// fills them from the group's schedule (docs/cost-model.md, "Composition charges").
#pragma once

#include <cstdint>

namespace stitch::artifact {

struct KernelCharges {
  bool global = false;        // the global composition (stages, grid barriers)
  int64_t grid_barriers = 0;  // stitch_grid_sync calls per launch
  // Blocks of the cooperative launch those barriers wait for (the schedule's grid); each
  // arrives by an atomic on one counter, so a barrier costs more with more blocks
  // (cost_model::grid_barrier_time_us). 0: no grid barrier.
  int64_t grid_blocks = 0;
  int64_t workspace_bytes = 0;  // intermediates stitched through global memory
  double thread_gemm_macs = 0;  // multiply-adds of GEMMs computed one output per thread
  double tiled_gemm_macs = 0;   // multiply-adds of a GEMM computed from shared tiles
  double attention_macs = 0;    // multiply-adds of a CUDA-core attention kernel's two GEMMs
  // Global loads each lane issues one after another in dot products it recomputes (the
  // attention prologue's inlined projections: two per multiply-add): the busiest
  // warp's load chain of the emulated profile's latency term (docs/perf-model.md).
  double load_chain = 0;
  // Global loads a lane issues one after another in the loops of the thread, packing and
  // global compositions (emit::kernel_shape: per stage, the lane's share of the stage's
  // dot products and reductions, each term's reads of its operands through the values
  // computed inline, summed over the stages).
  double gemm_load_chain = 0;
  // Global loads a lane issues walking the windows of the group's stencils (depthwise
  // convs, pools): its share of each stencil's evaluations, each tap one read of what
  // the stencil's input reads through the values computed inline (and a Conv's weight).
  // A 7x7 depthwise conv computed where a channels-last LayerNorm's 64 rows read it
  // leaves a few hundred threads walking 196 taps each: 35 us on an H100, where the
  // same conv over a thread per output and a LayerNorm kernel take 12 (convnext,
  // docs/benchmarks.md, 2026-11-27).
  double stencil_load_chain = 0;
  bool operator==(const KernelCharges& other) const = default;
};

}  // namespace stitch::artifact
