// cost_model/perf_model.h: each term of the emulated estimate from counters whose
// figures make the arithmetic easy to follow (docs/perf-model.md, "The model").
#include "cost_model/perf_model.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "cost_model/cost_model.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {
using test_util::test_profile;

StitchEmuCounters copy_counters() {
  // A coalesced copy of 1 MiB: 8192 warps, each one 128-byte load and store request.
  StitchEmuCounters c{};
  c.launches = 1;
  c.blocks = 1024;
  c.warps = 8192;
  c.threads = 262144;
  c.max_block_threads = 256;
  c.global_load_requests = c.global_store_requests = 8192;
  c.global_load_bytes = c.global_store_bytes = 1 << 20;
  c.global_load_distinct_bytes = c.global_store_distinct_bytes = 1 << 20;
  c.global_load_sectors = c.global_store_sectors = (1 << 20) / 32;
  c.global_load_lines = c.global_store_lines = (1 << 20) / 128;
  c.global_unique_load_bytes = c.global_unique_store_bytes = 1 << 20;
  c.global_unique_load_sectors = c.global_unique_store_sectors = (1 << 20) / 32;
  return c;
}

TEST(PerfModel, CoalescedCopyIsMemoryBoundAtTheCurve) {
  const DeviceProfile profile = test_profile();
  const KernelEstimate e = estimate_kernel(copy_counters(), std::nullopt, 0, profile);
  EXPECT_EQ(e.dram_bytes, 2 << 20);
  EXPECT_EQ(e.l2_bytes, 2 << 20);
  EXPECT_DOUBLE_EQ(e.dram_us, memory_time_us(profile, 2 << 20));
  EXPECT_DOUBLE_EQ(e.l2_us, (2 << 20) / profile.l2_bytes_per_second * 1e6);
  EXPECT_DOUBLE_EQ(e.sector_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(e.redundancy, 1.0);
  EXPECT_DOUBLE_EQ(e.launch_us, profile.launch_latency_us);
  EXPECT_DOUBLE_EQ(e.total_us, e.launch_us + std::max(e.dram_us, e.l2_us));
  EXPECT_EQ(e.sms_used, profile.sm_count);
  EXPECT_EQ(e.bound, e.dram_us > e.launch_us ? Bound::kMemory : Bound::kLaunch);
}

TEST(PerfModel, StridedReadsCostL2AndLowerTheSectorEfficiency) {
  const DeviceProfile profile = test_profile();
  StitchEmuCounters c = copy_counters();
  c.global_load_sectors *= 8;  // one 4-byte word per sector
  const KernelEstimate e = estimate_kernel(c, std::nullopt, 0, profile);
  EXPECT_DOUBLE_EQ(e.sector_efficiency, 2.0 / 9.0);  // (1 + 1) MiB / (8 + 1) x 1 MiB
  EXPECT_DOUBLE_EQ(e.l2_us, 9.0 * (1 << 20) / profile.l2_bytes_per_second * 1e6);
  EXPECT_EQ(e.dram_bytes, 2 << 20);  // the same bytes reach DRAM once
}

TEST(PerfModel, RepeatedReadsShowAsRedundancy) {
  StitchEmuCounters c = copy_counters();
  c.global_load_bytes *= 64;
  c.global_load_distinct_bytes *= 64;
  c.global_load_sectors *= 64;
  const KernelEstimate e = estimate_kernel(c, std::nullopt, 0, test_profile());
  EXPECT_DOUBLE_EQ(e.redundancy, 64.0);
}

TEST(PerfModel, BarriersAtomicsAndSharedWavefronts) {
  const DeviceProfile profile = test_profile();
  StitchEmuCounters c{};
  c.launches = 1;
  c.cooperative_launches = 1;
  c.blocks = 2;
  c.max_block_threads = 256;
  c.grid_barriers = 10;
  c.block_barriers = 20;
  c.atomic_max_per_address = 1000;
  c.shared_wavefronts = 3000;
  const KernelEstimate e = estimate_kernel(c, std::nullopt, 0, profile);
  EXPECT_EQ(e.sms_used, 2);
  // Each grid barrier of 2 blocks: grid_barrier_us less the atomics of the SMs' blocks
  // that are not there (grid_barrier_time_us).
  const double barrier =
      profile.grid_barrier_us + (2.0 - profile.sm_count) * profile.atomic_same_address_ns * 1e-3;
  const double sync = 20 * profile.block_barrier_cycles / (2 * profile.sm_clock_hz) * 1e6 +
                      10 * barrier + 1000 * profile.atomic_same_address_ns * 1e-3;
  EXPECT_DOUBLE_EQ(e.sync_us, sync);
  EXPECT_DOUBLE_EQ(e.shared_us, 3000 / (2 * profile.sm_clock_hz) * 1e6);
  EXPECT_EQ(e.bound, Bound::kBarrier);
  EXPECT_DOUBLE_EQ(e.total_us, e.launch_us + e.shared_us + e.sync_us);
  // The same KernelTime the analytic estimate fills: nothing moved and no instruction
  // estimate leave the launch as the plain time; the wavefronts and the sync's parts,
  // named, are the charge.
  EXPECT_DOUBLE_EQ(e.plain_us, e.launch_us);
  EXPECT_DOUBLE_EQ(e.charge_us(), e.total_us - e.launch_us);
  EXPECT_DOUBLE_EQ(e.charges.grid_barriers_us, 10 * barrier);
  EXPECT_DOUBLE_EQ(e.charges.block_barriers_us,
                   20 * profile.block_barrier_cycles / (2 * profile.sm_clock_hz) * 1e6);
  EXPECT_DOUBLE_EQ(e.charges.atomics_us, 1000 * profile.atomic_same_address_ns * 1e-3);
}

TEST(PerfModel, InstructionsGiveTheComputeTerm) {
  const DeviceProfile profile = test_profile();
  InstructionEstimate instructions;
  instructions.fp32 = 1e9;
  const KernelEstimate e = estimate_kernel(copy_counters(), instructions, 0, profile);
  // All FP32: the FP32 pipe's rate (peak / 2 FLOPs / 32 lanes per SM clock) limits it.
  const double fp32_rate =
      profile.fp32_flops_per_second / (2.0 * profile.sm_count * profile.sm_clock_hz) / 32.0;
  EXPECT_DOUBLE_EQ(e.compute_us,
                   1e9 / std::min(fp32_rate, 4.0) / (profile.sm_count * profile.sm_clock_hz) * 1e6);
  EXPECT_EQ(e.bound, Bound::kCompute);
  // Half of them FP64, at half the FP32 rate here: the FP64 pipe dominates.
  instructions.fp32 = 5e8;
  instructions.fp64 = 5e8;
  const double fp64_rate =
      profile.fp64_flops_per_second / (2.0 * profile.sm_count * profile.sm_clock_hz) / 32.0;
  const KernelEstimate f = estimate_kernel(copy_counters(), instructions, 0, profile);
  EXPECT_DOUBLE_EQ(f.compute_us, 5e8 / fp64_rate / (profile.sm_count * profile.sm_clock_hz) * 1e6);
}

TEST(PerfModel, LoadChainGivesTheLatencyTerm) {
  const DeviceProfile profile = test_profile();
  StitchEmuCounters c = copy_counters();
  c.global_load_chain = 4000;
  InstructionEstimate instructions;
  instructions.fp32 = 10;
  // Without control bits (no load rounds counted) there is no latency term.
  EXPECT_DOUBLE_EQ(estimate_kernel(c, instructions, 0, profile).latency_us, 0);
  // Three of every four loads waited out: 4000 x 0.75 x 130 ns.
  instructions.global_loads = 80;
  instructions.load_rounds = 60;
  const KernelEstimate e = estimate_kernel(c, instructions, 0, profile);
  EXPECT_DOUBLE_EQ(e.latency_us, 4000 * 0.75 * profile.global_load_latency_ns * 1e-3);
  EXPECT_EQ(e.bound, Bound::kLatency);
  EXPECT_STREQ(std::string(bound_name(e.bound)).c_str(), "latency");
  EXPECT_DOUBLE_EQ(e.total_us, e.launch_us + e.latency_us + e.sync_us);
  // A share above 1 (more waits than loads, on branchy code) is capped at every load.
  instructions.load_rounds = 200;
  EXPECT_DOUBLE_EQ(estimate_kernel(c, instructions, 0, profile).latency_us,
                   4000 * profile.global_load_latency_ns * 1e-3);
}

// Load sectors the L1 served do not cross to L2, and a chain request it served whole
// waits no global latency; the sector efficiency and the DRAM bytes are the requests'.
TEST(PerfModel, L1HitsLeaveTheL2AndLatencyTerms) {
  const DeviceProfile profile = test_profile();
  StitchEmuCounters c = copy_counters();
  c.global_load_sectors *= 4;  // every line read 4 times: 3 of them from the L1
  c.global_load_distinct_bytes *= 4;
  c.global_load_l1_hit_sectors = c.global_load_sectors * 3 / 4;
  c.global_load_chain = 400;
  c.global_load_chain_l1 = 300;
  InstructionEstimate instructions;
  instructions.global_loads = 80;
  instructions.load_rounds = 80;
  const KernelEstimate e = estimate_kernel(c, instructions, 0, profile);
  EXPECT_EQ(e.l1_hit_bytes, 3 << 20);
  EXPECT_EQ(e.l2_bytes, 2 << 20);  // 1 MiB loaded from L2 once, 1 MiB stored
  EXPECT_DOUBLE_EQ(e.l2_us, (2 << 20) / profile.l2_bytes_per_second * 1e6);
  EXPECT_EQ(e.dram_bytes, 2 << 20);
  EXPECT_DOUBLE_EQ(e.sector_efficiency, 1.0);
  // 100 requests wait for L2, 300 for an L1 hit of 33 clocks.
  EXPECT_DOUBLE_EQ(
      e.latency_us,
      (100 * profile.global_load_latency_ns + 300 * 33 / profile.sm_clock_hz * 1e9) * 1e-3);
  // More hits than requests (impossible from the counters) never go below zero.
  c.global_load_l1_hit_sectors = c.global_load_sectors + 1;
  c.global_load_chain_l1 = 401;
  const KernelEstimate capped = estimate_kernel(c, instructions, 0, profile);
  EXPECT_EQ(capped.l2_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(capped.latency_us, 400 * 33 / profile.sm_clock_hz * 1e9 * 1e-3);
}

TEST(PerfModel, OccupancyFromThreadsAndRegisters) {
  const DeviceProfile profile = test_profile();
  StitchEmuCounters c = copy_counters();
  // 1024 blocks of 256 over the SMs: 8 resident per SM by threads (2048 / 256).
  EXPECT_DOUBLE_EQ(estimate_kernel(c, std::nullopt, 0, profile).occupancy, 1.0);
  // 128 registers per thread: 65536 / (128 x 256) = 2 blocks, 16 of 64 warps.
  EXPECT_DOUBLE_EQ(estimate_kernel(c, std::nullopt, 128, profile).occupancy, 0.25);
}

TEST(PerfModel, LibraryCallFromFlopsAndBytes) {
  const DeviceProfile profile = test_profile();
  const KernelEstimate e = estimate_library_call(2e9, 1 << 20, false, std::nullopt, profile);
  EXPECT_EQ(e.bound, Bound::kLibrary);
  EXPECT_DOUBLE_EQ(e.compute_us,
                   2e9 / (profile.library_efficiency * profile.fp32_flops_per_second) * 1e6);
  EXPECT_DOUBLE_EQ(e.total_us, profile.launch_latency_us +
                                   std::max(e.compute_us, memory_time_us(profile, 1 << 20)));
  EXPECT_STREQ(std::string(bound_name(e.bound)).c_str(), "library");
  EXPECT_DOUBLE_EQ(e.charge_us(), 0.0);  // the library's own composition: no charge
}

// Every launch term is the launch mode's phi: a graph replay's for a plan compiled for
// graphs, a host launch's otherwise, in the emulated estimate (per launch), the library
// call's and the analytic one alike.
TEST(PerfModel, LaunchTermIsTheLaunchModesPhi) {
  DeviceProfile profile = test_profile();
  profile.launch_latency_us = 5;
  profile.calibration.graph_launch_latency_us = 2;
  StitchEmuCounters c = copy_counters();
  c.launches = 3;
  for (LaunchMode mode : {LaunchMode::kHost, LaunchMode::kGraph}) {
    profile.launch_mode = mode;
    const double phi = mode == LaunchMode::kGraph ? 2 : 5;
    const KernelEstimate e = estimate_kernel(c, std::nullopt, 0, profile);
    EXPECT_DOUBLE_EQ(e.launch_us, 3 * phi);
    EXPECT_DOUBLE_EQ(e.total_us, e.launch_us + std::max(e.dram_us, e.l2_us));
    EXPECT_DOUBLE_EQ(estimate_library_call(2e9, 1 << 20, false, std::nullopt, profile).launch_us,
                     phi);
    const KernelTime analytic = analytic_kernel_time(1 << 20, 0, 0, nullptr, profile);
    EXPECT_DOUBLE_EQ(analytic.launch_us, phi);
    EXPECT_DOUBLE_EQ(analytic.total_us, phi + memory_time_us(profile, 1 << 20));
  }
}

// A grid barrier costs one atomic per arriving block more or less than one block per SM
// (what calibrate times), and never less than half the calibrated barrier.
TEST(PerfModel, GridBarrierByBlockCount) {
  DeviceProfile profile = test_profile();
  profile.grid_barrier_us = 1.5;
  profile.atomic_same_address_ns = 1.0;
  const double sms = profile.sm_count;
  EXPECT_DOUBLE_EQ(grid_barrier_time_us(profile, 0), 1.5);  // unknown
  EXPECT_DOUBLE_EQ(grid_barrier_time_us(profile, sms), 1.5);
  EXPECT_DOUBLE_EQ(grid_barrier_time_us(profile, sms + 1000), 1.5 + 1.0);
  EXPECT_DOUBLE_EQ(grid_barrier_time_us(profile, 1), std::max(1.5 - (sms - 1) * 1e-3, 0.75));
  profile.atomic_same_address_ns = 1000;  // a slow atomic: the floor
  EXPECT_DOUBLE_EQ(grid_barrier_time_us(profile, 1), 0.75);
  // The emulated estimate charges each barrier at the launch's blocks.
  StitchEmuCounters c{};
  c.launches = 1;
  c.cooperative_launches = 1;
  c.blocks = static_cast<unsigned long long>(sms) * 8;
  c.max_block_threads = 256;
  c.grid_barriers = 4;
  profile.atomic_same_address_ns = 1.0;
  const KernelEstimate e = estimate_kernel(c, std::nullopt, 0, profile);
  EXPECT_DOUBLE_EQ(e.charges.grid_barriers_us, 4 * (1.5 + 7 * sms * 1e-3));
}

}  // namespace
}  // namespace stitch::cost_model
