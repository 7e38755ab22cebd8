// The emulation's hardware counters (STITCH_EMU_COUNTERS) on the kernels of
// counter_kernels.cu, whose figures follow from their access patterns: each expectation
// says how. 1024 threads = 32 warps; a float is 4 bytes, a sector 32, a line 128.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stitch_prelude.cuh"

extern "C" cudaError_t stitch_counter_launch(int kernel, const float* x, float* y, float* scratch,
                                             unsigned int* barrier);

namespace {

constexpr int kThreads = 1024;

// Buffers 256-byte aligned like device allocations, so sectors and lines are aligned too.
struct alignas(256) Buffers {
  float x[32 * kThreads];
  float y[kThreads];
  float scratch[8];
  unsigned int barrier[64];
};

StitchEmuCounters run(int kernel, Buffers& b, const StitchEmuLimits* limits = nullptr,
                      cudaError_t expected = cudaSuccess) {
  for (int i = 0; i < 32 * kThreads; ++i) b.x[i] = static_cast<float>(i % 7);
  const StitchEmuRegion regions[] = {{b.x, sizeof b.x},
                                     {b.y, sizeof b.y},
                                     {b.scratch, sizeof b.scratch},
                                     {b.barrier, sizeof b.barrier}};
  StitchEmuLimits defaults{2, 2048, 32, 65536, 0};
  EXPECT_EQ(stitch_emu_counters_begin(regions, 4, limits != nullptr ? limits : &defaults), 0);
  EXPECT_EQ(stitch_counter_launch(kernel, b.x, b.y, b.scratch, b.barrier), expected);
  StitchEmuCounters counters{};
  EXPECT_EQ(stitch_emu_counters_end(&counters), 0);
  return counters;
}

TEST(EmuCounters, CoalescedCopy) {
  static Buffers b;
  const StitchEmuCounters c = run(0, b);
  EXPECT_EQ(c.launches, 1u);
  EXPECT_EQ(c.blocks, 4u);
  EXPECT_EQ(c.warps, 32u);
  EXPECT_EQ(c.threads, 1024u);
  EXPECT_EQ(c.max_block_threads, 256u);
  // One request per warp, 32 lanes x 4 bytes = 128 bytes = 4 sectors = 1 line.
  EXPECT_EQ(c.global_load_requests, 32u);
  EXPECT_EQ(c.global_load_bytes, 4096u);
  EXPECT_EQ(c.global_load_distinct_bytes, 4096u);
  EXPECT_EQ(c.global_load_sectors, 128u);
  EXPECT_EQ(c.global_load_lines, 32u);
  EXPECT_EQ(c.global_store_requests, 32u);
  EXPECT_EQ(c.global_store_bytes, 4096u);
  EXPECT_EQ(c.global_store_distinct_bytes, 4096u);
  EXPECT_EQ(c.global_store_sectors, 128u);
  EXPECT_EQ(c.global_store_lines, 32u);
  EXPECT_EQ(c.global_unique_load_bytes, 4096u);
  EXPECT_EQ(c.global_unique_load_sectors, 128u);
  EXPECT_EQ(c.global_unique_store_bytes, 4096u);
  EXPECT_EQ(c.global_unique_store_sectors, 128u);
  EXPECT_EQ(c.shared_load_requests + c.shared_store_requests, 0u);
  EXPECT_EQ(c.block_barriers + c.grid_barriers + c.warp_shuffles + c.atomics, 0u);
  // Every warp waits on one load; the four blocks are co-resident (one wave).
  EXPECT_EQ(c.global_load_chain, 1u);
  // 32-bit accesses only.
  EXPECT_EQ(c.global_wide_load_bytes + c.global_wide_store_bytes, 0u);
}

TEST(EmuCounters, WideAccessesCountTheirBytes) {
  static Buffers b;
  const StitchEmuCounters c = run(9, b);
  // 256 lanes x 16 bytes: 8 warps, each one request of 512 bytes (16 sectors, 4 lines).
  EXPECT_EQ(c.global_load_requests, 8u);
  EXPECT_EQ(c.global_load_bytes, 4096u);
  EXPECT_EQ(c.global_load_sectors, 128u);
  EXPECT_EQ(c.global_load_lines, 32u);
  EXPECT_EQ(c.global_wide_load_bytes, 4096u);
  EXPECT_EQ(c.global_store_requests, 8u);
  EXPECT_EQ(c.global_wide_store_bytes, 4096u);
}

TEST(EmuCounters, LoadChainCountsEachWave) {
  static Buffers b;
  // One SM holding 512 threads: the 4 blocks of 256 run in two waves of 2.
  const StitchEmuLimits limits{1, 512, 32, 65536, 0};
  const StitchEmuCounters c = run(0, b, &limits);
  EXPECT_EQ(c.global_load_requests, 32u);
  EXPECT_EQ(c.global_load_chain, 2u);
}

// 2 SMs of 2048 threads and a 64 KB L1 each: 8 resident blocks of 256, 8 KB (256
// sectors) of L1 apiece.
constexpr StitchEmuLimits kL1Limits{2, 2048, 32, 65536, 0, 0, 65536};

// The L1 (StitchEmuLimits::l1_bytes_per_sm): 4 blocks of 256 each read their 1 KB
// twice (32 sectors per block); the second read hits whole when the block's share of
// the L1 (least recently used out) holds its 32 sectors.
TEST(EmuCounters, L1ServesABlocksRereads) {
  static Buffers b;
  // No L1 modelled (the default limits): no hits.
  StitchEmuCounters c = run(10, b);
  EXPECT_EQ(c.global_load_requests, 64u);
  EXPECT_EQ(c.global_load_sectors, 256u);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 0u);
  EXPECT_EQ(c.global_load_chain, 2u);
  EXPECT_EQ(c.global_load_chain_l1, 0u);
  // kL1Limits: 256 sectors per block.
  c = run(10, b, &kL1Limits);
  EXPECT_EQ(c.global_load_sectors, 256u);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 128u);  // every second read's 4 x 32
  EXPECT_EQ(c.global_load_chain, 2u);
  EXPECT_EQ(c.global_load_chain_l1, 1u);  // the busiest warp's second request
  // 7 KB per SM: 28 sectors a block, one warp's 4 short of its 32. The warps' first
  // reads go in step, warp 0's sectors out first; then warps 0-6 each find the next
  // warp's 4 sectors (7 x 4 hits a block) and warp 7 misses warp 0's.
  const StitchEmuLimits short_by_a_warp{2, 2048, 32, 65536, 0, 0, 7168};
  c = run(10, b, &short_by_a_warp);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 4u * 28u);
  // 2 KB per SM: 8 sectors a block. Each warp's second read wants sectors loaded 7
  // requests before it, long pushed out: no hit.
  const StitchEmuLimits tiny{2, 2048, 32, 65536, 0, 0, 2048};
  c = run(10, b, &tiny);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 0u);
}

// All 8 warps of a block read x[0] at the same step: warp 0 brings the sector in, the
// other 7 find it (no L2 traffic) but it is still on its way (they wait as long).
TEST(EmuCounters, L1SectorsInFlightSaveTrafficNotTheWait) {
  static Buffers b;
  const StitchEmuCounters c = run(2, b, &kL1Limits);
  EXPECT_EQ(c.global_load_sectors, 32u);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 4u * 7u);
  EXPECT_EQ(c.global_load_chain, 1u);
  EXPECT_EQ(c.global_load_chain_l1, 0u);
}

TEST(EmuCounters, L1IsEmptiedAtAGridBarrier) {
  static Buffers b;
  const StitchEmuCounters c = run(11, b, &kL1Limits);
  EXPECT_EQ(c.grid_barriers, 1u);
  EXPECT_EQ(c.global_load_sectors, 256u);
  EXPECT_EQ(c.global_load_l1_hit_sectors, 0u);
}

TEST(EmuCounters, SitesCountTheirRequests) {
  static Buffers b;
  run(0, b);  // y[i] = x[i]: one load site and one store site, 32 requests each
  StitchEmuSite sites[8];
  ASSERT_EQ(stitch_emu_counters_sites(sites, 8), 2);
  const bool load_first = sites[0].kind == kStitchEmuGlobalLoad;
  const StitchEmuSite& load = sites[load_first ? 0 : 1];
  const StitchEmuSite& store = sites[load_first ? 1 : 0];
  EXPECT_EQ(load.kind, static_cast<unsigned int>(kStitchEmuGlobalLoad));
  EXPECT_EQ(store.kind, static_cast<unsigned int>(kStitchEmuGlobalStore));
  EXPECT_EQ(load.requests, 32u);
  EXPECT_EQ(store.requests, 32u);
  EXPECT_NE(load.offset, store.offset);
}

TEST(EmuCounters, StridedReadsTouchASectorPerLane) {
  static Buffers b;
  const StitchEmuCounters c = run(1, b);
  // Lanes 128 bytes apart: each request touches 32 sectors in 32 lines for 128 bytes.
  EXPECT_EQ(c.global_load_requests, 32u);
  EXPECT_EQ(c.global_load_bytes, 4096u);
  EXPECT_EQ(c.global_load_sectors, 32u * 32u);
  EXPECT_EQ(c.global_load_lines, 32u * 32u);
  EXPECT_EQ(c.global_unique_load_bytes, 4096u);
  EXPECT_EQ(c.global_unique_load_sectors, 1024u);
  // The stores stay coalesced.
  EXPECT_EQ(c.global_store_sectors, 128u);
}

TEST(EmuCounters, BroadcastIsOneSectorAndFourUniqueBytes) {
  static Buffers b;
  const StitchEmuCounters c = run(2, b);
  EXPECT_EQ(c.global_load_requests, 32u);
  EXPECT_EQ(c.global_load_bytes, 4096u);              // requested: every lane asks for its 4 bytes
  EXPECT_EQ(c.global_load_distinct_bytes, 32u * 4u);  // 4 distinct bytes per request
  EXPECT_EQ(c.global_load_sectors, 32u);
  EXPECT_EQ(c.global_load_lines, 32u);
  EXPECT_EQ(c.global_unique_load_bytes, 4u);
  EXPECT_EQ(c.global_unique_load_sectors, 1u);
}

TEST(EmuCounters, TransposeWritesAreUncoalesced) {
  static Buffers b;
  const StitchEmuCounters c = run(3, b);
  EXPECT_EQ(c.global_load_sectors, 128u);  // rows: coalesced
  // A warp writes one column: 32 rows 128 bytes apart.
  EXPECT_EQ(c.global_store_requests, 32u);
  EXPECT_EQ(c.global_store_sectors, 32u * 32u);
  EXPECT_EQ(c.global_store_lines, 32u * 32u);
  EXPECT_EQ(c.global_unique_store_bytes, 4096u);
  EXPECT_EQ(c.global_unique_store_sectors, 128u);
}

TEST(EmuCounters, SharedBankConflicts) {
  static Buffers b;
  const StitchEmuCounters c = run(4, b);
  EXPECT_EQ(c.blocks, 1u);
  EXPECT_EQ(c.warps, 1u);
  EXPECT_EQ(c.max_shared_bytes_per_block, 32u * 33u * 4u);
  EXPECT_EQ(c.shared_store_requests, 2u);
  EXPECT_EQ(c.shared_load_requests, 4u);
  // Bytes: stores 128 + 128, loads 128 + 128 (broadcast: requested per lane) + 256 + 128.
  EXPECT_EQ(c.shared_bytes, 128u + 128u + 128u + 128u + 256u + 128u);
  // Wavefronts, in the kernel's order: 32, 1, 1, 1, 2, 2.
  EXPECT_EQ(c.shared_wavefronts, 32u + 1u + 1u + 1u + 2u + 2u);
  // Ideal: ceil(distinct bytes / 128) = 1, 1, 1, 1 (4 bytes), 2, 2 (256 bytes span,
  // 128 distinct bytes: one ideal wavefront).
  EXPECT_EQ(c.shared_ideal_wavefronts, 1u + 1u + 1u + 1u + 2u + 1u);
  EXPECT_EQ(c.shared_max_wavefronts, 32u);
  EXPECT_EQ(c.warp_votes, 2u);  // the two __syncwarp
  EXPECT_EQ(c.global_store_requests, 1u);
  EXPECT_EQ(c.global_store_sectors, 4u);
}

TEST(EmuCounters, ReductionBarriersShufflesAndAtomics) {
  static Buffers b;
  const StitchEmuCounters c = run(5, b);
  // stitch_block_reduce: 8 warps x 5 shuffles, then warp 0 another 5; 3 __syncthreads.
  EXPECT_EQ(c.warp_shuffles, 4u * (8u * 5u + 5u));
  EXPECT_EQ(c.block_barriers, 4u * 3u);
  EXPECT_EQ(c.atomics, 1024u);
  EXPECT_EQ(c.atomic_addresses, 1u);
  EXPECT_EQ(c.atomic_max_per_address, 1024u);
  // Atomics are not loads or stores; x[i] is, and block_sums is written by lane 0 of
  // warp 0 of each block: 4 requests of 4 bytes, a sector each.
  EXPECT_EQ(c.global_load_requests, 32u);
  EXPECT_EQ(c.global_store_requests, 4u);
  EXPECT_EQ(c.global_store_bytes, 16u);
  EXPECT_EQ(c.global_store_sectors, 4u);
  // Shared: per block lane 0 of 8 warps store (8 requests), warp 0 lanes 0-7 load
  // (1 request), lane 0 of warp 0 stores (1), 8 warps load scratch[0] (8).
  EXPECT_EQ(c.shared_store_requests, 4u * 9u);
  EXPECT_EQ(c.shared_load_requests, 4u * 9u);
  EXPECT_EQ(c.shared_wavefronts, c.shared_load_requests + c.shared_store_requests);
}

TEST(EmuCounters, GridBarrierOfACooperativeLaunch) {
  static Buffers b;
  const StitchEmuCounters c = run(6, b);
  EXPECT_EQ(c.cooperative_launches, 1u);
  EXPECT_EQ(c.grid_barriers, 1u);
  EXPECT_EQ(c.global_load_requests, 32u * 3u);
  EXPECT_EQ(c.global_store_requests, 32u * 2u);
  // The busiest warp of each phase: one load (x) before the barrier, two (y twice)
  // after it; the phases follow one another.
  EXPECT_EQ(c.global_load_chain, 1u + 2u);
  // y is read after it was written: its bytes are unique once per direction.
  EXPECT_EQ(c.global_unique_load_bytes, 4096u + 4096u);
  EXPECT_EQ(c.global_unique_store_bytes, 4096u);
}

TEST(EmuCounters, CooperativeGridLimitedByOccupancy) {
  static Buffers b;
  // One SM holding 512 threads: two blocks of 256 may be resident, the launch asks 4.
  const StitchEmuLimits limits{1, 512, 32, 65536, 0};
  const StitchEmuCounters c = run(6, b, &limits, cudaErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(c.launches, 0u);
  // Registers: 64 per thread x 256 threads = 16384 per block, 4 blocks fit 65536.
  const StitchEmuLimits registers{1, 2048, 32, 65536, 64};
  EXPECT_EQ(run(6, b, &registers).launches, 1u);
  const StitchEmuLimits too_many_registers{1, 2048, 32, 65536, 72};
  EXPECT_EQ(run(6, b, &too_many_registers, cudaErrorCooperativeLaunchTooLarge).launches, 0u);
}

// Block sampling (StitchEmuLimits::sample_blocks): 128 blocks of 8 threads, each one
// request of 32 bytes (one sector, one line) per direction. Counting runs of 32
// consecutive blocks, every 4th run (blocks 0-31 here), and scaling by 128 / 32 gives
// the exact figures when every block does the same; unique bytes always come from
// every block.
TEST(EmuCounters, SampledBlocksScaleToTheExactFigures) {
  static Buffers b;
  const StitchEmuLimits exact{2, 2048, 32, 65536, 0, 0};
  const StitchEmuLimits sampled{2, 2048, 32, 65536, 0, 32};
  const StitchEmuCounters all = run(7, b, &exact);
  const StitchEmuCounters some = run(7, b, &sampled);
  EXPECT_EQ(all.blocks, 128u);
  EXPECT_EQ(all.counted_blocks, 128u);
  EXPECT_EQ(some.counted_blocks, 32u);
  for (const StitchEmuCounters* c : {&all, &some}) {
    EXPECT_EQ(c->global_load_requests, 128u);
    EXPECT_EQ(c->global_load_bytes, 4096u);
    EXPECT_EQ(c->global_load_sectors, 128u);
    EXPECT_EQ(c->global_load_lines, 128u);
    EXPECT_EQ(c->global_store_requests, 128u);
    EXPECT_EQ(c->global_store_sectors, 128u);
    EXPECT_EQ(c->global_unique_load_bytes, 4096u);
    EXPECT_EQ(c->global_unique_store_bytes, 4096u);
  }
  // A grid of at most sample_blocks blocks is counted exactly.
  const StitchEmuLimits enough{2, 2048, 32, 65536, 0, 128};
  EXPECT_EQ(run(7, b, &enough).counted_blocks, 128u);
}

// The limit of sampling: when only blocks 0-31 store, the sample (blocks 0-31) scaled
// by 4 counts four times the store requests. Unique bytes stay exact.
TEST(EmuCounters, SamplingAssumesBlocksRunTheSameCode) {
  static Buffers b;
  const StitchEmuLimits exact{2, 2048, 32, 65536, 0, 0};
  const StitchEmuLimits sampled{2, 2048, 32, 65536, 0, 32};
  EXPECT_EQ(run(8, b, &exact).global_store_requests, 32u);
  const StitchEmuCounters c = run(8, b, &sampled);
  EXPECT_EQ(c.global_store_requests, 128u);
  EXPECT_EQ(c.global_unique_store_bytes, 1024u);
}

TEST(EmuCounters, BeginTwiceAndEndWithoutBeginFail) {
  StitchEmuCounters c{};
  EXPECT_EQ(stitch_emu_counters_end(&c), -1);
  ASSERT_EQ(stitch_emu_counters_begin(nullptr, 0, nullptr), 0);
  EXPECT_EQ(stitch_emu_counters_begin(nullptr, 0, nullptr), -1);
  EXPECT_EQ(stitch_emu_counters_end(&c), 0);
}

}  // namespace
