// The analytic way to fill a KernelTime: a kernel's bytes and FLOPs, and the charges
// of its composition (cost_model.h, "Kernel time of a group"; docs/cost-model.md,
// "Composition charges").
#include <algorithm>

#include "cost_model/cost_model.h"

namespace stitch::cost_model {

double tiled_gemm_instructions_per_mac(const DeviceProfile& profile) {
  switch (profile.products) {
    case ir::Precision::kTf32:
      return kTf32TiledInstructionsPerMac;
    case ir::Precision::kFloat32x3:
      return kFloat32x3TiledInstructionsPerMac;
    case ir::Precision::kBFloat16:
    case ir::Precision::kFloat16:
      return kHalfTiledInstructionsPerMac;
    default:
      return profile.calibration.tiled_gemm_instructions_per_mac;
  }
}

double cuda_core_gemm_us(const KernelShape& shape, const DeviceProfile& profile) {
  const Calibration& calibration = profile.calibration;
  // Under tf32 the CUDA-core GEMMs round both operands (two cvt.rna per product).
  const double rounding = profile.products == ir::Precision::kTf32 ? 2.0 : 0.0;
  const double instructions =
      shape.thread_gemm_macs * (calibration.thread_gemm_instructions_per_mac + rounding) +
      shape.tiled_gemm_macs * tiled_gemm_instructions_per_mac(profile) +
      shape.attention_macs * (calibration.attention_instructions_per_mac + rounding);
  // Warp instructions: one per 32 lanes; each scheduler of an SM issues one a cycle.
  const double issue_per_second = static_cast<double>(profile.sm_count) *
                                  calibration.warp_schedulers_per_sm * profile.sm_clock_hz;
  return instructions / profile.warp_size / issue_per_second * 1e6;
}

KernelTime analytic_kernel_time(int64_t bytes, double gathered_bytes, double compute_us,
                                const KernelShape* shape, const DeviceProfile& profile) {
  KernelTime time;
  const double l2_us =
      profile.l2_bytes_per_second > 0 ? gathered_bytes / profile.l2_bytes_per_second * 1e6 : 0.0;
  time.launch_us = launch_phi(profile);
  time.dram_us = memory_time_us(profile, static_cast<double>(bytes));
  time.l2_us = l2_us;
  time.compute_us = compute_us;
  time.plain_us = std::max({time.dram_us, l2_us, time.compute_us}) + launch_phi(profile);
  time.total_us = time.plain_us;
  if (shape != nullptr) {
    // The composition's costs, as the emulated profile counts them: the workspace
    // round trip with the bytes, CUDA-core GEMM issue time with the compute, grid
    // barriers after both.
    ChargeTimes& charges = time.charges;
    const double plain_dram_us = time.dram_us;
    time.dram_us = memory_time_us(profile, static_cast<double>(bytes + 2 * shape->workspace_bytes));
    charges.workspace_us = time.dram_us - plain_dram_us;
    const double memory = std::max(time.dram_us, l2_us);
    charges.gemm_instructions_us = cuda_core_gemm_us(*shape, profile);
    time.compute_us = std::max(time.compute_us, charges.gemm_instructions_us);
    const Calibration& calibration = profile.calibration;
    const double latency_per_load_us = profile.global_load_latency_ns * 1e-3;
    charges.load_chain_us =
        shape->load_chain * calibration.recomputed_dot_load_share * latency_per_load_us;
    charges.gemm_load_chain_us =
        shape->gemm_load_chain * calibration.gemm_load_share * latency_per_load_us;
    charges.stencil_load_chain_us =
        shape->stencil_load_chain * calibration.stencil_load_share * latency_per_load_us;
    // One product of the summed chains, not the sum of the parts above: the total
    // stays the number every plan and output was computed with.
    time.latency_us = (shape->load_chain * calibration.recomputed_dot_load_share +
                       shape->gemm_load_chain * calibration.gemm_load_share +
                       shape->stencil_load_chain * calibration.stencil_load_share) *
                      profile.global_load_latency_ns * 1e-3;
    charges.grid_barriers_us =
        static_cast<double>(shape->grid_barriers) *
        grid_barrier_time_us(profile, static_cast<double>(shape->grid_blocks));
    time.sync_us = charges.grid_barriers_us;
    time.total_us =
        launch_phi(profile) + std::max({memory, time.compute_us, time.latency_us}) + time.sync_us;
  }
  time.bound = largest_term(time);
  return time;
}

}  // namespace stitch::cost_model
