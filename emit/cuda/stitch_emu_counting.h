// stitch_emu_counting.h: what the emulation engine (stitch_emu.cc) and the hardware
// counters (stitch_emu_counting.cc, STITCH_EMU_COUNTERS; stitch_emu.h, "Hardware
// counters") share. Included by those two files only.
//
// The engine tells the counters where a launch, a block, a phase between grid barriers
// and each barrier or warp collective begin and end; the counters record the accesses
// of the emulated thread that runs now (t_counting) and fold them into warp-level
// requests. Without STITCH_EMU_COUNTERS every hook is an empty inline function.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stitch_emu {

// What the counters read of the emulated thread that runs now. The engine fills it when
// it lays out a domain and points t_counting at it while the thread runs.
struct CountingThread {
  uint32_t domain_warp = 0;              // warp index within the domain: a request's warp
  const unsigned char* arena = nullptr;  // its block's shared arena
  bool block_counted = true;             // its block's requests are counted (sampling)
  // Its accesses so far in the domain: a request's place in program order, where the
  // warps of a block are taken to be in step (the L1's order of requests).
  mutable uint32_t accesses = 0;
};

// The busiest warp's global load requests, and how many of them hit the L1 whole.
struct LoadChain {
  unsigned long long loads = 0;
  unsigned long long l1_loads = 0;
};
inline thread_local const CountingThread* t_counting = nullptr;

namespace counters {

#if defined(STITCH_EMU_COUNTERS)
// Whether counting is on (between stitch_emu_counters_begin and _end).
bool on();
// Whether block `linear_block` of the running launch has its requests counted.
bool block_counted(unsigned long long linear_block);
// A launch starts (before its first block runs).
void count_launch(bool cooperative, unsigned long long blocks, unsigned int block_threads,
                  size_t dynamic_shared_bytes);
// The end of a domain, or of a phase of it (a grid barrier): its records become
// requests; returns the global load requests of its busiest warp.
LoadChain flush_domain();
// The critical path: a cooperative launch's phases follow one another; the blocks of an
// ordinary launch run side by side, its waves one after another.
void end_phase(const LoadChain& busiest);
void end_block(const LoadChain& busiest);
void set_launch_waves(unsigned long long waves);
// The end of a launch of `blocks` blocks: its requests into the totals.
void fold_launch(unsigned long long blocks);
void count_block_barrier();
void count_grid_barrier();
void count_warp_collective(bool shuffle);
// A block's static shared arena of `bytes` (with the launch's dynamic shared memory).
void count_shared_arena(size_t bytes);
// The device's co-resident blocks of `block_threads` threads; 0 when no device limits
// were given.
int coresident_blocks(int block_threads);
#else
inline bool on() { return false; }
inline bool block_counted(unsigned long long) { return true; }
inline void count_launch(bool, unsigned long long, unsigned int, size_t) {}
inline LoadChain flush_domain() { return {}; }
inline void end_phase(const LoadChain&) {}
inline void end_block(const LoadChain&) {}
inline void set_launch_waves(unsigned long long) {}
inline void fold_launch(unsigned long long) {}
inline void count_block_barrier() {}
inline void count_grid_barrier() {}
inline void count_warp_collective(bool) {}
inline void count_shared_arena(size_t) {}
inline int coresident_blocks(int) { return 0; }
#endif

}  // namespace counters
}  // namespace stitch_emu
