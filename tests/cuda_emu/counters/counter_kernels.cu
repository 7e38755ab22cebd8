// counter_kernels.cu: hand-written kernels with access patterns whose hardware counters
// are known exactly (docs/perf-model.md). Compiled as C++ against the emulation with
// -DSTITCH_EMU_COUNTERS and AddressSanitizer's out-of-line checks (tests/cuda_emu/
// tests.cmake), and by nvcc like every kernel file. counters_test.cc states each kernel's
// figures and derives them by hand.
#include "stitch_prelude.cuh"

constexpr int kCounterThreads = 1024;  // 4 blocks of 256: 32 warps, launches 0-3, 5, 6

// y[i] = x[i]: each warp reads and writes 128 contiguous bytes.
STITCH_KERNEL void stitch_counter_copy_kernel(const float* __restrict__ x, float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i];
}

// y[i] = x[32 * i]: lanes 128 bytes apart, one sector and one line each.
STITCH_KERNEL void stitch_counter_strided_kernel(const float* __restrict__ x,
                                                 float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[32 * i];
}

// y[i] = x[0]: every lane reads the same word.
STITCH_KERNEL void stitch_counter_broadcast_kernel(const float* __restrict__ x,
                                                   float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[0];
}

// A 32 x 32 transpose without shared memory: reads along rows, writes along columns.
STITCH_KERNEL void stitch_counter_transpose_kernel(const float* __restrict__ x,
                                                   float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned int row = i / 32;
  const unsigned int column = i % 32;
  y[column * 32 + row] = x[i];
}

// One warp (block of 32) and shared memory. Requests, in order:
//   1. store s[lane * 32]        stride 32 words: every lane in bank 0, 32 wavefronts
//   2. store s[lane]             one wavefront
//   3. load  s[lane * 33]        padded stride: 32 different banks, one wavefront
//   4. load  s[0]                broadcast: one wavefront
//   5. load  d[lane] (8 bytes)   256 contiguous bytes: two wavefronts, both ideal
//   6. load  s[2 * lane]         stride 2 words: two words per bank, two wavefronts
// then y[lane] (one global store request) gets the sum.
STITCH_KERNEL void stitch_counter_banks_kernel(float* __restrict__ y) {
  STITCH_SHARED_ARENA(smem, 32 * 33 * 4);
  float* s = reinterpret_cast<float*>(smem);
  const unsigned int lane = threadIdx.x;
  s[lane * 32] = static_cast<float>(lane);
  __syncwarp();
  s[lane] = 1.0f;
  __syncwarp();
  const double* d = reinterpret_cast<const double*>(smem);
  const float sum = s[lane * 33] + s[0] + static_cast<float>(d[lane]) + s[2 * lane];
  y[lane] = sum;
}

// Block reductions then one atomicAdd per thread to a single address: 4 blocks of 256.
STITCH_KERNEL void stitch_counter_reduce_kernel(const float* __restrict__ x, float* total,
                                                float* block_sums) {
  STITCH_SHARED_ARENA(smem, 128);
  float* scratch = reinterpret_cast<float*>(smem);
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float value = x[i];
  atomicAdd(total, value);
  const float sum = stitch_block_reduce_sum(value, scratch);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = sum;
}

// Two phases separated by a grid barrier (a cooperative launch of 4 blocks).
STITCH_KERNEL void stitch_counter_grid_kernel(const float* __restrict__ x, float* y,
                                              unsigned int* barrier) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i] * 2.0f;
  stitch_grid_sync(barrier);
  y[i] = y[i] + y[(i + 256) % kCounterThreads];
}

// y[i] = x[i] for the first 32 blocks only: blocks that do not all run the same code
// (what block sampling cannot see).
STITCH_KERNEL void stitch_counter_first_blocks_kernel(const float* __restrict__ x,
                                                      float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x < 32) y[i] = x[i];
}

// y4[i] = x4[i] over 256 float4s: each lane loads and stores 16 bytes (128-bit).
STITCH_KERNEL void stitch_counter_copy4_kernel(const float4* __restrict__ x,
                                               float4* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i];
}

// Each block of 256 reads its 1 KB of x twice: its own warp's 128 bytes, then after a
// barrier the next warp's (wrapping within the block). The second read's sectors were
// all loaded by the block before: an L1 hit each, when its share of the L1 holds 1 KB.
STITCH_KERNEL void stitch_counter_reread_kernel(const float* __restrict__ x, float* __restrict__ y) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float own = x[i];
  __syncthreads();
  const float next = x[blockIdx.x * blockDim.x + (threadIdx.x + 32) % blockDim.x];
  y[i] = own + next;
}

// The reread in a cooperative launch, its second read after a grid barrier: the L1 is
// emptied at the barrier (what other blocks wrote must be read from L2), so no hits.
STITCH_KERNEL void stitch_counter_reread_grid_kernel(const float* __restrict__ x, float* y,
                                                     unsigned int* barrier) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float own = x[i];
  stitch_grid_sync(barrier);
  const float next = x[blockIdx.x * blockDim.x + (threadIdx.x + 32) % blockDim.x];
  y[i] = own + next;
}

#ifndef __CUDACC_RTC__
extern "C" cudaError_t stitch_counter_launch(int kernel, const float* x, float* y, float* scratch,
                                             unsigned int* barrier) {
  switch (kernel) {
    case 0:
      return STITCH_LAUNCH(stitch_counter_copy_kernel, 4, 256, 0, nullptr, x, y);
    case 1:
      return STITCH_LAUNCH(stitch_counter_strided_kernel, 4, 256, 0, nullptr, x, y);
    case 2:
      return STITCH_LAUNCH(stitch_counter_broadcast_kernel, 4, 256, 0, nullptr, x, y);
    case 3:
      return STITCH_LAUNCH(stitch_counter_transpose_kernel, 4, 256, 0, nullptr, x, y);
    case 4:
      return STITCH_LAUNCH(stitch_counter_banks_kernel, 1, 32, 0, nullptr, y);
    case 5:
      return STITCH_LAUNCH(stitch_counter_reduce_kernel, 4, 256, 0, nullptr, x, scratch,
                           scratch + 1);
    case 7:  // the copy in 128 blocks of 8 threads (one partial warp each)
      return STITCH_LAUNCH(stitch_counter_copy_kernel, 128, 8, 0, nullptr, x, y);
    case 8:
      return STITCH_LAUNCH(stitch_counter_first_blocks_kernel, 128, 8, 0, nullptr, x, y);
    case 9:
      return STITCH_LAUNCH(stitch_counter_copy4_kernel, 1, 256, 0, nullptr,
                           reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y));
    case 10:
      return STITCH_LAUNCH(stitch_counter_reread_kernel, 4, 256, 0, nullptr, x, y);
    case 11:
      return STITCH_LAUNCH_COOPERATIVE(stitch_counter_reread_grid_kernel, 4, 256, 0, nullptr, x, y,
                                       barrier);
    default:
      return STITCH_LAUNCH_COOPERATIVE(stitch_counter_grid_kernel, 4, 256, 0, nullptr, x, y,
                                       barrier);
  }
}
#endif
