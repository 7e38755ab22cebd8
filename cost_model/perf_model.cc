#include "cost_model/perf_model.h"

#include <algorithm>
#include <cmath>

#include "cost_model/cost_model.h"

namespace stitch::cost_model {

namespace {

// An L1 hit's latency in SM clocks: 28 on Volta (Jia et al., "Dissecting the NVIDIA
// Volta GPU Architecture via Microbenchmarking", 2018), about 33 on Ampere and Hopper
// (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024).
constexpr double kL1HitCycles = 33;

// Blocks of `block_threads` threads (and `shared_bytes` of shared memory each) that one
// SM holds at once under the profile's limits.
int blocks_per_sm(const DeviceProfile& profile, int64_t block_threads, int64_t shared_bytes,
                  int registers) {
  if (block_threads <= 0) return 0;
  const int64_t threads =
      (block_threads + profile.warp_size - 1) / profile.warp_size * profile.warp_size;
  int64_t blocks =
      std::min<int64_t>(profile.max_blocks_per_sm, profile.max_threads_per_sm / threads);
  const int64_t per_thread = registers > 0 ? registers : 32;
  blocks = std::min<int64_t>(blocks, profile.registers_per_sm / (per_thread * threads));
  if (shared_bytes > 0)
    blocks = std::min<int64_t>(blocks, profile.shared_memory_per_sm / shared_bytes);
  return static_cast<int>(std::max<int64_t>(blocks, 0));
}

}  // namespace

KernelEstimate estimate_kernel(const StitchEmuCounters& c,
                               const std::optional<InstructionEstimate>& instructions,
                               int registers, const DeviceProfile& profile) {
  KernelEstimate e;
  const double clock = profile.sm_clock_hz;
  const int resident = blocks_per_sm(profile, static_cast<int64_t>(c.max_block_threads),
                                     static_cast<int64_t>(c.max_shared_bytes_per_block), registers);
  e.sms_used = static_cast<int>(
      std::min<unsigned long long>(c.blocks, static_cast<unsigned long long>(profile.sm_count)));
  const double sms = std::max(1, e.sms_used);
  const double max_warps = static_cast<double>(profile.max_threads_per_sm) / profile.warp_size;
  const double warps_per_block =
      std::ceil(static_cast<double>(c.max_block_threads) / profile.warp_size);
  if (c.blocks > 0 && resident > 0) {
    const double blocks_on_busiest_sm =
        std::min<double>(resident, std::ceil(static_cast<double>(c.blocks) / profile.sm_count));
    e.occupancy = blocks_on_busiest_sm * warps_per_block / max_warps;
  }

  e.launch_us = static_cast<double>(c.launches) * launch_phi(profile);
  e.dram_bytes =
      static_cast<int64_t>((c.global_unique_load_sectors + c.global_unique_store_sectors) * 32);
  e.requested_bytes = static_cast<int64_t>(c.global_load_bytes + c.global_store_bytes);
  const unsigned long long sectors = c.global_load_sectors + c.global_store_sectors;
  // Sectors a block finds in its L1 (the counters' model, docs/perf-model.md "L1") do
  // not cross to L2.
  const unsigned long long l1_hits = std::min(c.global_load_l1_hit_sectors, c.global_load_sectors);
  e.l1_hit_bytes = static_cast<int64_t>(l1_hits * 32);
  e.l2_bytes = static_cast<int64_t>((sectors - l1_hits) * 32);
  e.sector_efficiency =
      sectors > 0
          ? static_cast<double>(c.global_load_distinct_bytes + c.global_store_distinct_bytes) /
                (32.0 * static_cast<double>(sectors))
          : 1.0;
  e.redundancy = c.global_unique_load_bytes > 0
                     ? static_cast<double>(c.global_load_bytes) /
                           static_cast<double>(c.global_unique_load_bytes)
                     : 1.0;
  e.dram_us = memory_time_us(profile, static_cast<double>(e.dram_bytes));
  e.l2_us = static_cast<double>(e.l2_bytes) / profile.l2_bytes_per_second * 1e6;
  if (instructions.has_value()) {
    // Warp instructions per SM per clock: each scheduler issues one; the pipes take
    // FP32 and FP64 at the profile's peak rates, integer, the special function units
    // (MUFU and conversions) and load/store at the calibration's lanes per clock (64, 16
    // and 32 on compute capability 7.0-9.0: CUDA C++ Programming Guide, "Arithmetic
    // Instructions").
    const Calibration& calibration = profile.calibration;
    const double lanes = profile.warp_size;
    const double fp32_rate =
        profile.fp32_flops_per_second / (2.0 * profile.sm_count * clock) / lanes;
    const double fp64_rate =
        profile.fp64_flops_per_second / (2.0 * profile.sm_count * clock) / lanes;
    const double cycles =
        std::max({instructions->total() / calibration.warp_schedulers_per_sm,
                  instructions->fp32 / fp32_rate, instructions->fp64 / fp64_rate,
                  instructions->integer / (calibration.integer_lanes_per_sm_clock / lanes),
                  instructions->special / (calibration.special_lanes_per_sm_clock / lanes),
                  instructions->memory / (calibration.memory_lanes_per_sm_clock / lanes)});
    e.compute_us = cycles / (sms * clock) * 1e6;
    // The busiest warp's chain of load requests, each waited out in the share of them
    // the SASS waits on (1 when every load is used before the next is issued, 1/k
    // when k independent groups are in flight); a request served whole by the L1 waits
    // an L1 hit's kL1HitCycles instead.
    if (instructions->global_loads > 0) {
      const double share = std::min(1.0, instructions->load_rounds / instructions->global_loads);
      const unsigned long long l1 = std::min(c.global_load_chain_l1, c.global_load_chain);
      const double wait_ns =
          static_cast<double>(c.global_load_chain - l1) * profile.global_load_latency_ns +
          static_cast<double>(l1) * kL1HitCycles / clock * 1e9;
      e.latency_us = wait_ns * share * 1e-3;
    }
  }
  e.shared_us = static_cast<double>(c.shared_wavefronts) / (sms * clock) * 1e6;
  ChargeTimes& charges = e.charges;
  charges.load_chain_us = e.latency_us;
  charges.block_barriers_us =
      static_cast<double>(c.block_barriers) * profile.block_barrier_cycles / (sms * clock) * 1e6;
  // The blocks of a cooperative launch arrive at each of its barriers.
  const double grid_blocks = c.cooperative_launches > 0 && c.launches > 0
                                 ? static_cast<double>(c.blocks) / static_cast<double>(c.launches)
                                 : 0.0;
  charges.grid_barriers_us =
      static_cast<double>(c.grid_barriers) * grid_barrier_time_us(profile, grid_blocks);
  charges.atomics_us =
      static_cast<double>(c.atomic_max_per_address) * profile.atomic_same_address_ns * 1e-3;
  e.sync_us = charges.block_barriers_us + charges.grid_barriers_us + charges.atomics_us;
  const double memory_us = std::max(e.dram_us, e.l2_us);
  e.total_us =
      e.launch_us + std::max({memory_us, e.compute_us, e.shared_us, e.latency_us}) + e.sync_us;
  e.plain_us = e.launch_us + std::max(memory_us, e.compute_us);
  e.bound = largest_term(e);
  return e;
}

KernelEstimate estimate_library_call(double flops, int64_t bytes, bool fp16,
                                     const std::optional<LibraryGemm>& gemm,
                                     const DeviceProfile& profile) {
  KernelEstimate e;
  e.launch_us = launch_phi(profile);
  e.dram_bytes = bytes;
  e.requested_bytes = bytes;
  e.l2_bytes = bytes;
  e.dram_us = memory_time_us(profile, static_cast<double>(bytes));
  // float32 under --precision tf32: cuBLASLt's and cuDNN's TF32 tensor cores.
  const bool tf32 =
      !fp16 && profile.products == ir::Precision::kTf32 && profile.tf32_flops_per_second > 0;
  const double peak = fp16   ? profile.fp16_flops_per_second
                      : tf32 ? profile.tf32_flops_per_second
                             : profile.fp32_flops_per_second;
  const double rate = profile.library_efficiency * peak;  // FLOP/s over every SM
  e.sms_used = profile.sm_count;
  if (gemm) {
    const LibraryTiling tiling = library_tiling(*gemm, fp16 || tf32, profile);
    e.compute_us = static_cast<double>(tiling.waves) * tiling.cta_flops /
                   (rate / std::max(profile.sm_count, 1)) * 1e6;
    e.latency_us = tiling.load_rounds * profile.global_load_latency_ns * 1e-3;
    e.sms_used = static_cast<int>(tiling.sms);
  } else {
    e.compute_us = flops / rate * 1e6;
  }
  e.total_us = e.launch_us + std::max({e.dram_us, e.compute_us, e.latency_us});
  e.plain_us = e.total_us;  // a library call's composition is the library's: no charge
  e.bound = Bound::kLibrary;
  return e;
}

}  // namespace stitch::cost_model
