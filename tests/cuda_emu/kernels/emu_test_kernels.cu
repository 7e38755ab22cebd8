// emu_test_kernels.cu: hand-written kernels in the style of generated code (the kernel
// contract of issue 5), used to test the emulation layer. The same file is compiled by
// nvcc (sm_80, sm_90, warnings as errors), by NVRTC, and as C++ with -DSTITCH_EMULATION
// by the tests in tests/cuda_emu, which compare every output with a host computation.
//
// Each kernel has a contract launcher, <name>_launch(inputs, outputs, workspace, stream),
// and <name>_workspace_bytes(); shapes are compile-time constants, as in generated code.
#include "stitch_prelude.cuh"

// ---- row_sum: a block per row; block reductions (shuffles + shared scratch) -------------
constexpr int kRowSumCols = 1000;

// y[2 * r] = sum of row r, y[2 * r + 1] = max of row r.
STITCH_KERNEL void stitch_test_row_sum_kernel(const float* x, float* y) {
  STITCH_SHARED_ARENA(smem, 128);
  float* scratch = reinterpret_cast<float*>(smem);
  const float* row = x + static_cast<long long>(blockIdx.x) * kRowSumCols;
  float sum = 0.0f;
  float largest = -__int_as_float(0x7f800000);
  for (int c = static_cast<int>(threadIdx.x); c < kRowSumCols; c += static_cast<int>(blockDim.x)) {
    sum += row[c];
    largest = fmaxf(largest, row[c]);
  }
  sum = stitch_block_reduce_sum(sum, scratch);
  largest = stitch_block_reduce_max(largest, scratch);  // reuses scratch right away
  if (threadIdx.x == 0) {
    y[2 * blockIdx.x] = sum;
    y[2 * blockIdx.x + 1] = largest;
  }
}

// ---- softmax: a warp per row, warp reductions; the last block has warps without a row ---
constexpr int kSoftmaxRows = 37;
constexpr int kSoftmaxCols = 300;

STITCH_KERNEL void stitch_test_softmax_kernel(const float* x, float* y) {
  const unsigned int row = blockIdx.x * (blockDim.x / 32u) + stitch_warp_id();
  if (row >= static_cast<unsigned int>(kSoftmaxRows)) return;  // the whole warp leaves
  const unsigned int lane = stitch_lane_id();
  const float* in = x + row * kSoftmaxCols;
  float* out = y + row * kSoftmaxCols;
  float largest = -__int_as_float(0x7f800000);
  for (unsigned int c = lane; c < static_cast<unsigned int>(kSoftmaxCols); c += 32u) {
    largest = fmaxf(largest, in[c]);
  }
  largest = stitch_warp_reduce_max(largest);
  float sum = 0.0f;
  for (unsigned int c = lane; c < static_cast<unsigned int>(kSoftmaxCols); c += 32u) {
    sum += expf(in[c] - largest);
  }
  const float inverse = 1.0f / stitch_warp_reduce_sum(sum);
  for (unsigned int c = lane; c < static_cast<unsigned int>(kSoftmaxCols); c += 32u) {
    out[c] = expf(in[c] - largest) * inverse;
  }
}

// ---- transpose through a shared tile: needs __syncthreads between write and read --------
constexpr int kTransposeRows = 70;  // x is rows x cols, y is cols x rows
constexpr int kTransposeCols = 45;
constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;  // block (32, 8)

template <bool kBarrier>
STITCH_DEVICE void stitch_test_transpose_tile(const float* x, float* y, float* tile) {
  const unsigned int col0 = blockIdx.x * kTile;
  const unsigned int row0 = blockIdx.y * kTile;
  for (unsigned int r = threadIdx.y; r < static_cast<unsigned int>(kTile); r += kTileRowsPerPass) {
    const unsigned int row = row0 + r;
    const unsigned int col = col0 + threadIdx.x;
    if (row < static_cast<unsigned int>(kTransposeRows) &&
        col < static_cast<unsigned int>(kTransposeCols)) {
      tile[r * (kTile + 1) + threadIdx.x] = x[row * kTransposeCols + col];
    }
  }
  if (kBarrier) __syncthreads();
  for (unsigned int r = threadIdx.y; r < static_cast<unsigned int>(kTile); r += kTileRowsPerPass) {
    const unsigned int out_row = col0 + r;
    const unsigned int out_col = row0 + threadIdx.x;
    if (out_row < static_cast<unsigned int>(kTransposeCols) &&
        out_col < static_cast<unsigned int>(kTransposeRows)) {
      y[out_row * kTransposeRows + out_col] = tile[threadIdx.x * (kTile + 1) + r];
    }
  }
}

STITCH_KERNEL void stitch_test_transpose_kernel(const float* x, float* y) {
  STITCH_SHARED_ARENA(smem, kTile * (kTile + 1) * 4);
  stitch_test_transpose_tile<true>(x, y, reinterpret_cast<float*>(smem));
}

// The same kernel with the barrier missing: a data race on the tile.
STITCH_KERNEL void stitch_test_transpose_racy_kernel(const float* x, float* y) {
  STITCH_SHARED_ARENA(smem, kTile * (kTile + 1) * 4);
  stitch_test_transpose_tile<false>(x, y, reinterpret_cast<float*>(smem));
}

// ---- variance: cooperative, grid-stride, two stitch_grid_sync on one counter ------------
constexpr long long kVarianceCount = 100003;
constexpr int kVarianceMaxBlocks = 1024;
// workspace: [0, 4) grid barrier counter, [16, 16 + 4 * 1024) per-block sums,
// then per-block sums of squared deviations.
constexpr int kVariancePartialOffset = 16;

// out[0] = mean, out[1] = population variance (two passes over x).
STITCH_KERNEL void stitch_test_variance_kernel(const float* x, float* out,
                                               unsigned char* workspace) {
  STITCH_SHARED_ARENA(smem, 128);
  float* scratch = reinterpret_cast<float*>(smem);
  unsigned int* counter = reinterpret_cast<unsigned int*>(workspace);
  float* partial_sum = reinterpret_cast<float*>(workspace + kVariancePartialOffset);
  float* partial_square = partial_sum + kVarianceMaxBlocks;
  float acc = 0.0f;
  for (long long i = stitch_global_thread(); i < kVarianceCount; i += stitch_grid_threads()) {
    acc += x[i];
  }
  acc = stitch_block_reduce_sum(acc, scratch);
  if (threadIdx.x == 0) partial_sum[blockIdx.x] = acc;
  stitch_grid_sync(counter);
  float total = 0.0f;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += partial_sum[b];
  const float mean = stitch_block_reduce_sum(total, scratch) / static_cast<float>(kVarianceCount);
  float square = 0.0f;
  for (long long i = stitch_global_thread(); i < kVarianceCount; i += stitch_grid_threads()) {
    const float d = x[i] - mean;
    square += d * d;
  }
  square = stitch_block_reduce_sum(square, scratch);
  if (threadIdx.x == 0) partial_square[blockIdx.x] = square;
  stitch_grid_sync(counter);
  if (blockIdx.x == 0) {
    float squares = 0.0f;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) squares += partial_square[b];
    squares = stitch_block_reduce_sum(squares, scratch);
    if (threadIdx.x == 0) {
      out[0] = mean;
      out[1] = squares / static_cast<float>(kVarianceCount);
    }
  }
}

// ---- histogram: atomics from many blocks, the last block publishes ----------------------
constexpr int kHistogramCount = 50000;
constexpr int kHistogramBins = 16;
// workspace (zeroed by the caller): bins, blocks-done ticket, max, min - 16, float sum,
// float max bits (CAS loop), last block id.
struct StitchTestHistogramWorkspace {
  unsigned int bins[kHistogramBins];
  unsigned int done;
  int largest;
  int smallest_minus_16;
  float sum;
  unsigned int largest_value_bits;
  unsigned int last_block;
};

// values[i] in [0, 16); weights[i] >= 0. Outputs: bins (uint32[16]), {max, min} (int32[2]),
// {sum of weights, max weight} (float[2]), the block that finished last (uint32[1]).
STITCH_KERNEL void stitch_test_histogram_kernel(const int* values, const float* weights,
                                                unsigned int* bins, int* extremes,
                                                float* weight_stats, unsigned int* last,
                                                StitchTestHistogramWorkspace* ws) {
  STITCH_SHARED_ARENA(smem, kHistogramBins * 4 + 16);
  unsigned int* local_bins = reinterpret_cast<unsigned int*>(smem);
  unsigned int* is_last = reinterpret_cast<unsigned int*>(smem + kHistogramBins * 4);
  for (unsigned int b = threadIdx.x; b < static_cast<unsigned int>(kHistogramBins);
       b += blockDim.x) {
    local_bins[b] = 0u;
  }
  __syncthreads();
  float weight_sum = 0.0f;
  for (long long i = stitch_global_thread(); i < kHistogramCount; i += stitch_grid_threads()) {
    const int v = values[i];
    atomicAdd(&local_bins[v], 1u);
    atomicMax(&ws->largest, v);
    atomicMin(&ws->smallest_minus_16, v - 16);
    weight_sum += weights[i];
    unsigned int seen = atomicCAS(&ws->largest_value_bits, 0u, 0u);
    while (__uint_as_float(seen) < weights[i]) {
      const unsigned int previous =
          atomicCAS(&ws->largest_value_bits, seen, __float_as_uint(weights[i]));
      if (previous == seen) break;
      seen = previous;
    }
  }
  atomicAdd(&ws->sum, weight_sum);
  __syncthreads();
  for (unsigned int b = threadIdx.x; b < static_cast<unsigned int>(kHistogramBins);
       b += blockDim.x) {
    atomicAdd(&ws->bins[b], local_bins[b]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicExch(&ws->last_block, blockIdx.x);
    *is_last = atomicAdd(&ws->done, 1u) == gridDim.x - 1u ? 1u : 0u;
  }
  __syncthreads();
  if (*is_last == 0u) return;
  __threadfence();
  for (unsigned int b = threadIdx.x; b < static_cast<unsigned int>(kHistogramBins);
       b += blockDim.x) {
    bins[b] = atomicAdd(&ws->bins[b], 0u);
  }
  if (threadIdx.x == 0) {
    extremes[0] = atomicMax(&ws->largest, -1);
    extremes[1] = atomicMin(&ws->smallest_minus_16, 0) + 16;
    weight_stats[0] = atomicAdd(&ws->sum, 0.0f);
    weight_stats[1] = __uint_as_float(atomicCAS(&ws->largest_value_bits, 0u, 0u));
    last[0] = atomicExch(&ws->last_block, blockIdx.x);
  }
}

// ---- 16-bit floats and narrowing stores -------------------------------------------------
constexpr int kConvertCount = 64;

STITCH_KERNEL void stitch_test_convert_kernel(const float* x, __half* half_out, float* half_back,
                                              __nv_bfloat16* bf16_out, float* bf16_back,
                                              signed char* int8_out, unsigned char* uint8_out,
                                              int* int32_out) {
  const long long i = stitch_global_thread();
  if (i >= kConvertCount) return;
  const float v = stitch_load_f(x + i);
  half_out[i] = __float2half_rn(v);
  half_back[i] = stitch_load_f(half_out + i);
  stitch_store_f(bf16_out + i, v);
  bf16_back[i] = __bfloat162float(bf16_out[i]);
  stitch_store_f(int8_out + i, v);
  stitch_store_f(uint8_out + i, v);
  stitch_store_f(int32_out + i, v);
}

// ---- warp collectives with segments (width < 32), partial masks and votes ---------------

// Per element: sum over its 8-lane segment (xor, width 8), lane 3 of its 16-lane segment
// (idx, width 16), inclusive scan over its 16-lane segment (up, width 16), the value 3
// lanes down within its 8-lane segment (down, width 8), and a shuffle under a half-warp
// mask in divergent branches. Per warp: ballot, any and all of x > 0.
STITCH_KERNEL void stitch_test_lanes_kernel(const float* x, float* segment_sum, float* head,
                                            float* scan, float* down, float* half_mask,
                                            unsigned int* votes) {
  const long long i = stitch_global_thread();
  const unsigned int lane = stitch_lane_id();
  const float v = x[i];
  float s = v;
  for (int offset = 4; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset, 8);
  segment_sum[i] = s;
  head[i] = __shfl_sync(0xffffffffu, v, 3, 16);
  float prefix = v;
  for (unsigned int d = 1; d < 16u; d <<= 1) {
    const float t = __shfl_up_sync(0xffffffffu, prefix, d, 16);
    if ((lane & 15u) >= d) prefix += t;
  }
  scan[i] = prefix;
  down[i] = __shfl_down_sync(0xffffffffu, v, 3u, 8);
  float h;
  if (lane < 16u) {
    h = __shfl_sync(0x0000ffffu, v, 15);
  } else {
    h = __shfl_sync(0xffff0000u, v, 16);
  }
  half_mask[i] = h;
  const unsigned int ballot = __ballot_sync(0xffffffffu, v > 0.0f);
  const int any = __any_sync(0xffffffffu, v > 0.0f);
  const int all = __all_sync(0xffffffffu, v > 0.0f);
  __syncwarp();
  if (lane == 0u) {
    const long long warp = i / 32;
    votes[3 * warp] = ballot;
    votes[3 * warp + 1] = static_cast<unsigned int>(any);
    votes[3 * warp + 2] = static_cast<unsigned int>(all);
  }
}

// ---- block_reverse: two barriers per block, the emulator's throughput case --------------
constexpr int kReverseThreads = 256;

// y[b][t] = 2 * x[b][255 - t]; the second barrier guards a write-after-read on the buffer.
STITCH_KERNEL void stitch_test_block_reverse_kernel(const float* x, float* y) {
  STITCH_SHARED_ARENA(smem, kReverseThreads * 4);
  float* buffer = reinterpret_cast<float*>(smem);
  const unsigned int t = threadIdx.x;
  const long long base = static_cast<long long>(blockIdx.x) * kReverseThreads;
  buffer[t] = x[base + t];
  __syncthreads();
  const float mirrored = buffer[kReverseThreads - 1 - t];
  __syncthreads();
  buffer[t] = 2.0f * mirrored;
  y[base + t] = buffer[t];
}

// ---- launchers (host side only) ----------------------------------------------------------
#if !defined(__CUDACC_RTC__)

// Launch configurations: host-only (NVRTC warns about constants the device code does not
// use).
constexpr int kRowSumRows = 64;
constexpr int kRowSumThreads = 256;
constexpr int kSoftmaxThreads = 128;
constexpr int kVarianceThreads = 256;
constexpr int kHistogramBlocks = 64;
constexpr int kHistogramThreads = 256;
constexpr int kLaneThreads = 96;  // 3 warps
constexpr int kLaneBlocks = 2;
constexpr int kReverseBlocks = 1024;

// ---- mma.sync m16n8k16: one warp, fragments built from row-major A [16, 16] and
// B [16, 8] (float16 values) by PTX's layouts (lane = 4 group + quad; CUTLASS's
// SM80_16x8x16_F32F16F16F32_TN traits spell the same), D [16, 8] written back by the
// accumulator layout, starting from C. Stored as float, converted in the kernel.
STITCH_KERNEL void stitch_test_mma_kernel(const float* a, const float* b, const float* c,
                                          float* d) {
  const int lane = static_cast<int>(threadIdx.x);
  const int group = lane / 4, quad = lane % 4;
  uint32_t a_regs[4], b_regs[2];
  for (int r = 0; r < 4; ++r) {
    const int row = group + 8 * (r & 1), col = 2 * quad + 8 * (r >> 1);
    a_regs[r] =
        stitch_pack16(__float2half_rn(a[row * 16 + col]), __float2half_rn(a[row * 16 + col + 1]));
  }
  for (int r = 0; r < 2; ++r) {
    const int k = 2 * quad + 8 * r;
    b_regs[r] =
        stitch_pack16(__float2half_rn(b[k * 8 + group]), __float2half_rn(b[(k + 1) * 8 + group]));
  }
  float acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = c[(group + 8 * (i >> 1)) * 8 + 2 * quad + (i & 1)];
  stitch_mma_m16n8k16_f16(acc, a_regs, b_regs);
  for (int i = 0; i < 4; ++i) d[(group + 8 * (i >> 1)) * 8 + 2 * quad + (i & 1)] = acc[i];
}

extern "C" cudaError_t stitch_test_mma_launch(const void* const* inputs, void* const* outputs,
                                              void*, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_mma_kernel, dim3(1), dim3(32), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
                       static_cast<const float*>(inputs[2]), static_cast<float*>(outputs[0]));
}

// ---- mma.sync m16n8k8 TF32: A [16, 8] and B [8, 8] rounded by cvt.rna.tf32 into PTX's
// fragments (CUTLASS's SM80_16x8x8_F32TF32TF32F32_TN spells the same layouts), D [16, 8]
// from C by the accumulator layout.
STITCH_KERNEL void stitch_test_mma_tf32_kernel(const float* a, const float* b, const float* c,
                                               float* d) {
  const int lane = static_cast<int>(threadIdx.x);
  const int group = lane / 4, quad = lane % 4;
  uint32_t a_regs[4], b_regs[2];
  for (int r = 0; r < 4; ++r)
    a_regs[r] = stitch_tf32(a[(group + 8 * (r & 1)) * 8 + quad + 4 * (r >> 1)]);
  for (int r = 0; r < 2; ++r) b_regs[r] = stitch_tf32(b[(quad + 4 * r) * 8 + group]);
  float acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = c[(group + 8 * (i >> 1)) * 8 + 2 * quad + (i & 1)];
  stitch_mma_m16n8k8_tf32(acc, a_regs, b_regs);
  for (int i = 0; i < 4; ++i) d[(group + 8 * (i >> 1)) * 8 + 2 * quad + (i & 1)] = acc[i];
}

extern "C" cudaError_t stitch_test_mma_tf32_launch(const void* const* inputs, void* const* outputs,
                                                   void*, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_mma_tf32_kernel, dim3(1), dim3(32), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
                       static_cast<const float*>(inputs[2]), static_cast<float*>(outputs[0]));
}

extern "C" cudaError_t stitch_test_row_sum_launch(const void* const* inputs, void* const* outputs,
                                                  void*, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_row_sum_kernel, dim3(kRowSumRows), dim3(kRowSumThreads), 0,
                       stream, static_cast<const float*>(inputs[0]),
                       static_cast<float*>(outputs[0]));
}
extern "C" size_t stitch_test_row_sum_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_softmax_launch(const void* const* inputs, void* const* outputs,
                                                  void*, cudaStream_t stream) {
  const unsigned int rows_per_block = kSoftmaxThreads / 32;
  const unsigned int blocks = (kSoftmaxRows + rows_per_block - 1) / rows_per_block;
  return STITCH_LAUNCH(stitch_test_softmax_kernel, dim3(blocks), dim3(kSoftmaxThreads), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]));
}
extern "C" size_t stitch_test_softmax_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_transpose_launch(const void* const* inputs, void* const* outputs,
                                                    void*, cudaStream_t stream) {
  const dim3 grid((kTransposeCols + kTile - 1) / kTile, (kTransposeRows + kTile - 1) / kTile);
  return STITCH_LAUNCH(stitch_test_transpose_kernel, grid, dim3(kTile, kTileRowsPerPass), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]));
}
extern "C" size_t stitch_test_transpose_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_transpose_racy_launch(const void* const* inputs,
                                                         void* const* outputs, void*,
                                                         cudaStream_t stream) {
  const dim3 grid((kTransposeCols + kTile - 1) / kTile, (kTransposeRows + kTile - 1) / kTile);
  return STITCH_LAUNCH(stitch_test_transpose_racy_kernel, grid, dim3(kTile, kTileRowsPerPass), 0,
                       stream, static_cast<const float*>(inputs[0]),
                       static_cast<float*>(outputs[0]));
}
extern "C" size_t stitch_test_transpose_racy_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_variance_launch(const void* const* inputs, void* const* outputs,
                                                   void* workspace, cudaStream_t stream) {
  const int coresident =
      stitch_max_coresident_blocks(stitch_test_variance_kernel, kVarianceThreads, 0);
  if (coresident <= 0) return cudaErrorCooperativeLaunchTooLarge;
  const long long needed = (kVarianceCount + kVarianceThreads - 1) / kVarianceThreads;
  long long blocks = needed < coresident ? needed : coresident;
  blocks = blocks < kVarianceMaxBlocks ? blocks : kVarianceMaxBlocks;
  return STITCH_LAUNCH_COOPERATIVE(
      stitch_test_variance_kernel, dim3(static_cast<unsigned int>(blocks)), dim3(kVarianceThreads),
      0, stream, static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
      static_cast<unsigned char*>(workspace));
}
extern "C" size_t stitch_test_variance_workspace_bytes(void) {
  return kVariancePartialOffset + 2 * 4 * kVarianceMaxBlocks;
}

extern "C" cudaError_t stitch_test_histogram_launch(const void* const* inputs, void* const* outputs,
                                                    void* workspace, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_histogram_kernel, dim3(kHistogramBlocks),
                       dim3(kHistogramThreads), 0, stream, static_cast<const int*>(inputs[0]),
                       static_cast<const float*>(inputs[1]), static_cast<unsigned int*>(outputs[0]),
                       static_cast<int*>(outputs[1]), static_cast<float*>(outputs[2]),
                       static_cast<unsigned int*>(outputs[3]),
                       static_cast<StitchTestHistogramWorkspace*>(workspace));
}
extern "C" size_t stitch_test_histogram_workspace_bytes(void) {
  return sizeof(StitchTestHistogramWorkspace);
}

extern "C" cudaError_t stitch_test_convert_launch(const void* const* inputs, void* const* outputs,
                                                  void*, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_convert_kernel, dim3(1), dim3(kConvertCount), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<__half*>(outputs[0]),
                       static_cast<float*>(outputs[1]), static_cast<__nv_bfloat16*>(outputs[2]),
                       static_cast<float*>(outputs[3]), static_cast<signed char*>(outputs[4]),
                       static_cast<unsigned char*>(outputs[5]), static_cast<int*>(outputs[6]));
}
extern "C" size_t stitch_test_convert_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_lanes_launch(const void* const* inputs, void* const* outputs,
                                                void*, cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_lanes_kernel, dim3(kLaneBlocks), dim3(kLaneThreads), 0, stream,
                       static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
                       static_cast<float*>(outputs[1]), static_cast<float*>(outputs[2]),
                       static_cast<float*>(outputs[3]), static_cast<float*>(outputs[4]),
                       static_cast<unsigned int*>(outputs[5]));
}
extern "C" size_t stitch_test_lanes_workspace_bytes(void) { return 0; }

extern "C" cudaError_t stitch_test_block_reverse_launch(const void* const* inputs,
                                                        void* const* outputs, void*,
                                                        cudaStream_t stream) {
  return STITCH_LAUNCH(stitch_test_block_reverse_kernel, dim3(kReverseBlocks),
                       dim3(kReverseThreads), 0, stream, static_cast<const float*>(inputs[0]),
                       static_cast<float*>(outputs[0]));
}
extern "C" size_t stitch_test_block_reverse_workspace_bytes(void) { return 0; }

#endif  // !__CUDACC_RTC__
