// stitch_emu_counters.h: the C interface of the emulation's hardware counters
// (STITCH_EMU_COUNTERS; stitch_emu.h says how accesses are recorded, docs/perf-model.md
// what the figures mean). Plain C declarations: included by stitch_emu.h in a counting
// build (by its bare name: the runtime copies this file beside stitch_emu.h into the
// emulation's build directory, tests/cuda_emu puts artifact/ on the include path), by
// runtime_stub (host_backend finds the functions with dlsym in the emulated kernel
// library) and by cost_model/perf_model.h, which turns the counts into time. A neutral
// record both sides use, so it lives in artifact/, below emit/, cost_model/ and
// runtime_stub/: neither the model that reads the ABI nor the runtime that fetches it
// depends on the other. No stitchopt header may be included here: it is compiled into
// the emulated kernels as it is.
#pragma once

// Regions are the global buffers a launch may touch (inputs, outputs, workspace);
// accesses outside them and the block's shared arena (the stack, the emulator's own
// data) are not counted.
extern "C" {
struct StitchEmuRegion {
  const void* base;
  unsigned long long bytes;
};
// The device's limits for the cooperative grid size (max_coresident_blocks).
struct StitchEmuLimits {
  unsigned int sm_count;
  unsigned int max_threads_per_sm;
  unsigned int max_blocks_per_sm;
  unsigned int registers_per_sm;
  unsigned int registers_per_thread;  // from ptxas; 0: unknown (32 assumed)
  // Block sampling: a launch of more blocks than this counts the requests of runs of
  // 32 consecutive blocks, every k-th run from block 0 (about sample_blocks blocks in
  // all), and scales them by blocks / counted blocks; 0 counts every block. Unique
  // bytes and sectors, barriers, warp collectives and atomics always come from every
  // block.
  unsigned int sample_blocks;
  // The L1 (data cache and shared memory together) of one SM, in bytes: the L1 the
  // counters model (StitchEmuCounters::global_load_l1_hit_sectors); 0 models none.
  unsigned int l1_bytes_per_sm;
};
struct StitchEmuCounters {
  // Launch geometry.
  unsigned long long launches;
  unsigned long long cooperative_launches;
  unsigned long long blocks;
  unsigned long long warps;
  unsigned long long threads;
  unsigned long long max_block_threads;
  unsigned long long max_shared_bytes_per_block;  // arena + dynamic
  // Global memory: warp-level requests, the bytes the lanes asked for, the distinct
  // 32-byte sectors and 128-byte lines each request touched (summed over requests), and
  // the distinct bytes and sectors of the whole window.
  // *_distinct_bytes: per request, the distinct bytes its lanes asked for (a broadcast
  // of one word counts 4), summed; distinct bytes / (32 x sectors) is the request's
  // sector efficiency, at most 1.
  unsigned long long global_load_requests;
  unsigned long long global_load_bytes;
  unsigned long long global_load_distinct_bytes;
  unsigned long long global_load_sectors;
  unsigned long long global_load_lines;
  unsigned long long global_store_requests;
  unsigned long long global_store_bytes;
  unsigned long long global_store_distinct_bytes;
  unsigned long long global_store_sectors;
  unsigned long long global_store_lines;
  unsigned long long global_unique_load_bytes;
  unsigned long long global_unique_load_sectors;
  unsigned long long global_unique_store_bytes;
  unsigned long long global_unique_store_sectors;
  // Shared memory: requests, bytes, and wavefronts (32 banks of 4 bytes: a request takes
  // as many wavefronts as the most distinct words it touches in one bank); ideal
  // wavefronts are ceil(distinct bytes / 128), so conflicts = wavefronts - ideal.
  unsigned long long shared_load_requests;
  unsigned long long shared_store_requests;
  unsigned long long shared_bytes;
  unsigned long long shared_wavefronts;
  unsigned long long shared_ideal_wavefronts;
  unsigned long long shared_max_wavefronts;  // of one request
  // Synchronisation: completed __syncthreads (one per block), grid barriers (one per
  // round), warp collectives (one per warp), atomics (one per thread), the distinct
  // addresses they hit and the most atomics on one address.
  unsigned long long block_barriers;
  unsigned long long grid_barriers;
  unsigned long long warp_shuffles;
  unsigned long long warp_votes;
  unsigned long long atomics;
  unsigned long long atomic_addresses;
  unsigned long long atomic_max_per_address;
  // Blocks whose requests were counted (== blocks unless a launch was sampled).
  unsigned long long counted_blocks;
  // Latency: the global load requests of the busiest warp of each phase (a launch, or
  // the stretch between two grid barriers), summed over the phases; a launch of more
  // blocks than are co-resident counts its busiest warp once per wave. A warp waits on
  // its requests; this is the launch's critical path of them.
  unsigned long long global_load_chain;
  // 128-bit accesses: the global bytes of lane accesses of 16 bytes each (a float4,
  // LDG.E.128 / STG.E.128), loads and stores, counted in *_bytes above too.
  unsigned long long global_wide_load_bytes;
  unsigned long long global_wide_store_bytes;
  // L1: the sectors of global load requests that a block finds in its share of the
  // SM's L1 (what the L1 left after the resident blocks' shared memory, split among
  // them), because one of its own earlier requests loaded them: least recently used
  // first out, requests in program order with the warps in step, emptied at a grid
  // barrier. Counted in global_load_sectors too. global_load_chain_l1: the requests of
  // global_load_chain whose every sector hit, loaded by an earlier step (a sector
  // another warp's request brought in at the same step is still on its way).
  unsigned long long global_load_l1_hit_sectors;
  unsigned long long global_load_chain_l1;
};
// One access site of the counted window: the return address of its __tsan_* call as an
// offset into the shared object (or executable) that holds it, what it accesses, and
// how many warp-level requests it made. The instruction estimate matches these to the
// kernel's SASS through their source lines (profiling/instruction_estimate.h).
enum StitchEmuSiteKind {
  kStitchEmuGlobalLoad = 0,
  kStitchEmuGlobalStore = 1,
  kStitchEmuSharedLoad = 2,
  kStitchEmuSharedStore = 3
};
struct StitchEmuSite {
  unsigned long long offset;
  unsigned int kind;  // StitchEmuSiteKind
  unsigned long long requests;
};
// 0 on success; -1 when counting is already on or an argument is invalid.
int stitch_emu_counters_begin(const StitchEmuRegion* regions, int region_count,
                              const StitchEmuLimits* limits);
// Stops counting and writes the totals; -1 when counting was off.
int stitch_emu_counters_end(StitchEmuCounters* counters);
// The sites of the last counted window, up to `capacity` of them (sorted by offset and
// kind); returns how many there are in all.
int stitch_emu_counters_sites(StitchEmuSite* sites, int capacity);
}
