// One kernel launch's time, term by term: what both performance models fill. The
// analytic estimate (cost_model.h, estimate_group) fills it from a group's bytes,
// FLOPs and KernelShape; the emulated one (perf_model.h, estimate_kernel) from the
// counters the CUDA emulation recorded. Either way
//   total = launch + max(max(dram, l2), compute, shared, latency) + sync
// and `bound` names the largest of launch, memory (max(dram, l2)), compute, shared,
// latency and sync ("barrier"). `plain_us` is what the kernel's bytes and work alone
// cost, launch + max(dram, l2, compute) before any charge of its composition (the
// analytic: from the bytes a group moves and M(V), its FLOPs at peak; the emulated:
// from the sectors and the instructions it issued); total_us - plain_us is the charge,
// and `charges` names its parts.
//
// Example (analytic, H100 profile): a global-composition group moving 8 MB with one
// grid barrier has dram_us = M(8 MB + 2 x its workspace), sync_us =
// charges.grid_barriers_us = 1 x grid_barrier_us, and charge_us() what both add to the
// group's plain time.
#pragma once

#include <string_view>

namespace stitch::cost_model {

enum class Bound { kMemory, kCompute, kShared, kBarrier, kLaunch, kLibrary, kLatency };
std::string_view bound_name(Bound bound);  // "memory", "compute", ...

// What a composition adds beyond its bytes and work, by name. Each part lies inside a
// term of KernelTime: workspace_us in dram_us, gemm_instructions_us competes in
// compute_us, the load chains make latency_us, the barriers and atomics sync_us. A
// model fills the parts it sees; the others stay 0.
struct ChargeTimes {
  // Analytic: M(bytes + 2 x workspace bytes) - M(bytes), the intermediates a global
  // kernel writes to its workspace and reads back.
  double workspace_us = 0;
  // Analytic: the CUDA-core GEMMs' issue time (cuda_core_gemm_us).
  double gemm_instructions_us = 0;
  // Global load latency a warp waits out. Analytic: the recomputed dot products'
  // chain (KernelShape::load_chain), the thread/packing/global loops' (gemm_load_chain)
  // and the stencil windows' (stencil_load_chain), each x its calibrated share x
  // global_load_latency_ns. Emulated: the busiest warp's whole chain in load_chain_us.
  double load_chain_us = 0;
  double gemm_load_chain_us = 0;
  double stencil_load_chain_us = 0;
  double grid_barriers_us = 0;   // grid barriers x grid_barrier_us (both models)
  double block_barriers_us = 0;  // emulated: block barriers x cycles over the SMs in use
  double atomics_us = 0;         // emulated: most atomics on one address x their latency
};

struct KernelTime {
  double launch_us = 0;   // launches x phi (launch_phi)
  double dram_us = 0;     // M(bytes through DRAM) on the profile's bandwidth curve
  double l2_us = 0;       // bytes through L2 / l2_bytes_per_second
  double compute_us = 0;  // arithmetic: FLOPs at peak (analytic), issued instructions
  double shared_us = 0;   // shared-memory wavefronts (emulated)
  double latency_us = 0;  // global load latency waited out (the load chains)
  double sync_us = 0;     // barriers and atomics, after everything else
  double total_us = 0;
  double plain_us = 0;  // launch + max(dram, l2, compute) of the bytes and work alone
  Bound bound = Bound::kLaunch;
  ChargeTimes charges;

  double charge_us() const { return total_us - plain_us; }
};

// The largest term of `time`: launch, memory (max(dram, l2)), compute, shared, latency
// or sync (kBarrier), the first of them on a tie.
Bound largest_term(const KernelTime& time);

}  // namespace stitch::cost_model
