// stitch_prelude.cuh: the fixed prelude every generated kernel file includes first.
//
// It gives generated code one spelling for the CUDA features it uses, so the same .cu
// compiles three ways ("the kernel contract", docs/codegen.md):
//   nvcc            CUDA runtime + device code (libstitch_kernels.so, sm_80 and sm_90);
//   NVRTC           device code only (__CUDACC_RTC__: no launchers, no cuda_runtime.h);
//   g++/clang++     -DSTITCH_EMULATION: stitch_emu.h, the host emulation that the tests
//                   compare against the reference interpreter.
//
// Primitives (CUDA meaning; stitch_emu.h gives the emulated one):
//   STITCH_KERNEL                 extern "C" __global__, before a kernel definition.
//   STITCH_ASSUME(condition)      a fact the optimizer may use (nvcc: __builtin_assume;
//                                 the emulation ignores it).
//   STITCH_DEVICE                 __device__ __forceinline__, before a device helper.
//   STITCH_SHARED_ARENA(n, B);    first statement of a kernel with shared memory:
//                                 __shared__ __align__(16) unsigned char n[B]. B is a
//                                 constant <= 48 KiB, CUDA's static __shared__ limit (the
//                                 emulation static_asserts it); omitted when B is 0.
//   STITCH_LAUNCH(k, grid, block, dynamic_shared_bytes, stream, args...)
//   STITCH_LAUNCH_COOPERATIVE(...) expressions of type cudaError_t: cudaLaunchKernelEx
//                                 (programmatic dependent launch on sm_90+), or
//                                 cudaLaunchCooperativeKernel.
//   stitch_wait_for_predecessors() every kernel's first statement after the index type
//                                 and the arena (PDL's wait, then its trigger).
//   stitch_max_coresident_blocks(k, block_threads, dynamic_shared_bytes)
//                                 occupancy x SM count; the static arena is already
//                                 counted by the occupancy API, so pass 0 for kernels
//                                 whose shared memory is the arena (passing the arena size
//                                 again is merely conservative). 0 when the query fails.
//   stitch_grid_sync(counter)     grid-wide barrier of a cooperative launch; counter is 4
//                                 zeroed workspace bytes used by this barrier only.
//   stitch_warp_reduce_{sum,max,min}, stitch_block_reduce_{sum,max,min}, index helpers,
//   stitch_load_f / stitch_store_f: defined below for every mode.
//
// Notes for code generators (facts the contract relies on):
//   - NVRTC 13 has no built-in cuda_fp16.h / cuda_bf16.h: compile with
//     -I<cuda>/include (stitch_nvrtc_check adds it). NVRTC has no <cstdint>, so the
//     fixed-width integer typedefs are provided here under __CUDACC_RTC__.
//   - Workspace memory written by one block and read by another after stitch_grid_sync
//     must not be read through const __restrict__ / __ldg (the read-only path is not
//     coherent within a kernel).
//   - Warp and block reductions use full-warp masks: every thread of the block calls
//     them and the block size is a multiple of 32.
#pragma once

#if defined(STITCH_EMULATION)

#include "stitch_emu.h"

#else  // CUDA: nvcc or NVRTC

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
#else
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define STITCH_KERNEL extern "C" __global__
// A fact the optimizer may use (a flat index is never negative): nvcc's builtin.
#define STITCH_ASSUME(condition) __builtin_assume(condition)
#define STITCH_DEVICE __device__ __forceinline__
#define STITCH_SHARED_ARENA(name, bytes) __shared__ __align__(16) unsigned char name[bytes]

// Tensor-core multiply-accumulate for one warp (sm_80+; the attention composition in
// float16/bfloat16): d += a x b, m16n8k16, float accumulators, in PTX's fragment
// layouts (lane = 4 group + quad): a[r] holds A[group + 8 (r & 1)][2 quad + 8 (r >> 1)
// + {0, 1}] (A 16 x 16, row-major), b[r] holds B[2 quad + 8 r + {0, 1}][group] (B 16 x
// 8), d[i] is D[group + 8 (i >> 1)][2 quad + (i & 1)]; two 16-bit values per register,
// the lower index in the low half. The emulation (stitch_emu.h) computes the same.
STITCH_DEVICE void stitch_mma_m16n8k16_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
STITCH_DEVICE void stitch_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// TF32 tensor cores (sm_80+; the tiled MatMul composition under --precision tf32 or
// fp32x3, ir/core/precision.h): stitch_tf32(x) is x rounded to TF32 (cvt.rna: 10
// mantissa bits, ties away from zero) as the 32-bit register mma reads; the tensor core
// ignores the low 13 bits of its operands, so an unrounded float would be truncated.
// d += a x b, m16n8k8, float accumulators, PTX's fragment layouts (lane = 4 group +
// quad): a[r] holds A[group + 8 (r & 1)][quad + 4 (r >> 1)] (A 16 x 8, row-major),
// b[r] holds B[quad + 4 r][group] (B 8 x 8), d[i] is D[group + 8 (i >> 1)][2 quad + (i &
// 1)]. The emulation (stitch_emu.h) computes the same.
STITCH_DEVICE uint32_t stitch_tf32(float x) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
  return bits;
}
STITCH_DEVICE float stitch_tf32_value(uint32_t bits) { return __uint_as_float(bits); }
// A float32 GEMM operand on CUDA cores under --precision tf32: the value a tensor core
// would multiply (two such values multiply exactly in float).
STITCH_DEVICE float stitch_round_tf32(float x) { return stitch_tf32_value(stitch_tf32(x)); }
STITCH_DEVICE void stitch_mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Grid-wide barrier on one workspace word, the scheme of cooperative_groups' grid.sync.
// Each round, block 0 adds 0x80000000 - (blocks - 1) and every other block adds 1, so
// the round's additions sum to exactly 0x80000000: bit 31 flips once, when the last block
// arrives, whatever the arrival order, and the low 31 bits return to 0 (they never carry
// into bit 31 mid-round, since at most blocks - 1 < 2^31 ones are added before block 0's
// share or after it). A waiter spins until bit 31 differs from the value its own atomicAdd
// returned. No block can leave early (the flip needs every arrival), and no waiter can
// miss the flip (the next flip needs every block to arrive again, including the waiter),
// so the counter is reusable without resetting and needs no separate sense variable.
// Memory: __syncthreads orders the block's writes before thread 0's __threadfence and
// atomicAdd (release, cumulative over the block); the closing __threadfence and
// __syncthreads make other blocks' writes visible to the whole block (acquire). The spin
// reads through volatile so it is not hoisted or served from L1. Progress needs every
// block resident at once, which is what a cooperative launch guarantees (it fails rather
// than launch more blocks than can be co-resident).
STITCH_DEVICE void stitch_grid_sync(unsigned int* counter) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
    const bool first_block = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
    const unsigned int increment = first_block ? 0x80000000u - (blocks - 1u) : 1u;
    __threadfence();
    const unsigned int arrival = atomicAdd(counter, increment);
    const volatile unsigned int* flag = counter;
    while (((arrival ^ *flag) & 0x80000000u) == 0u) {
    }
    __threadfence();
  }
  __syncthreads();
}

#if !defined(__CUDACC_RTC__)

#define STITCH_LAUNCH(kernel, grid, block, shared_dynamic_bytes, stream, ...) \
  stitch_launch(kernel, grid, block, shared_dynamic_bytes, stream, ##__VA_ARGS__)
#define STITCH_LAUNCH_COOPERATIVE(kernel, grid, block, shared_dynamic_bytes, stream, ...) \
  stitch_launch_cooperative(kernel, grid, block, shared_dynamic_bytes, stream, ##__VA_ARGS__)

// Programmatic dependent launch (compute capability 9.0+, docs/codegen.md "Launches"):
// whether launches ask for it. Off on older GPUs (the attribute is theirs to ignore or
// refuse, so it is not asked) and when the environment has STITCH_PDL=0 (a switch for
// telling a PDL problem from another: every launch then waits for its predecessor).
inline bool stitch_pdl_wanted() {
  static const bool enabled = [] {
    const char* setting = std::getenv("STITCH_PDL");
    return setting == nullptr || setting[0] != '0';
  }();
  int device = 0;
  if (!enabled || cudaGetDevice(&device) != cudaSuccess) return false;
  // Per device, asked once: 0 not yet known, 1 without PDL, 2 with (devices past the
  // table are asked every time).
  static std::atomic<signed char> known[64] = {};  // launches may come from many threads
  const bool cached = device >= 0 && device < 64;
  const signed char seen = cached ? known[device].load(std::memory_order_relaxed) : 0;
  if (seen != 0) return seen == 2;
  int major = 0;
  const bool pdl =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 9;
  if (cached) known[device].store(pdl ? 2 : 1, std::memory_order_relaxed);
  return pdl;
}

// A kernel launch with cudaLaunchKernelEx: with programmatic stream serialization where
// the device has it, so the kernel may begin launching while its predecessor in the
// stream still runs (once every block of that one has passed its own
// stitch_wait_for_predecessors); its blocks then wait in stitch_wait_for_predecessors
// until the predecessor has completed and its writes are visible. Captured into a CUDA
// graph, the dependency becomes a programmatic edge. The arguments as an array of
// pointers to values of the kernel's parameter types (plus a null, so that a kernel
// without parameters still gets an array).
template <class... Params, class... Args>
cudaError_t stitch_launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                          size_t shared_dynamic_bytes, cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong arity");
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_dynamic_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = stitch_pdl_wanted() ? 1 : 0;
  auto launch = [&](Params... params) {
    void* pointers[sizeof...(Params) + 1] = {static_cast<void*>(&params)..., nullptr};
    return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), pointers);
  };
  return launch(static_cast<Params>(args)...);
}

// cudaLaunchCooperativeKernel takes the arguments as an array of pointers to values of
// the kernel's parameter types: the lambda's parameters are exactly those values.
template <class... Params, class... Args>
cudaError_t stitch_launch_cooperative(void (*kernel)(Params...), dim3 grid, dim3 block,
                                      size_t shared_dynamic_bytes, cudaStream_t stream,
                                      Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong arity");
  auto launch = [&](Params... params) {
    void* pointers[sizeof...(Params) + 1] = {static_cast<void*>(&params)..., nullptr};
    return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers,
                                       shared_dynamic_bytes, stream);
  };
  return launch(static_cast<Params>(args)...);
}

template <class Kernel>
int stitch_max_coresident_blocks(Kernel* kernel, int block_threads, size_t shared_bytes) {
  int device = 0;
  int blocks_per_sm = 0;
  int sm_count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block_threads,
                                                    shared_bytes) != cudaSuccess ||
      cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 0;
  }
  return blocks_per_sm * sm_count;
}

#endif  // !__CUDACC_RTC__
#endif  // STITCH_EMULATION

// ---- helpers shared by every mode -------------------------------------------------------

// Every generated kernel calls this after its declarations (index type, shared arena)
// and before anything else (programmatic dependent launch, sm_90+; stitch_launch):
// griddepcontrol.wait returns once the grids this one depends on programmatically
// have completed and their memory operations are visible (at once when there are
// none: launched without the attribute, after a library call, cooperatively), so
// nothing of this kernel reads or writes memory before its predecessor is done; then
// griddepcontrol.launch_dependents lets the next kernel of the stream begin launching
// while this one runs. On older GPUs, in the host pass and in the emulation: nothing.
STITCH_DEVICE void stitch_wait_for_predecessors() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

STITCH_DEVICE unsigned int stitch_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
STITCH_DEVICE unsigned int stitch_thread_linear() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
STITCH_DEVICE unsigned int stitch_grid_blocks() { return gridDim.x * gridDim.y * gridDim.z; }
STITCH_DEVICE unsigned int stitch_block_linear() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
// Index of this thread among all threads of the grid, and their count: grid-stride loops
// run `for (long long i = stitch_global_thread(); i < n; i += stitch_grid_threads())`.
STITCH_DEVICE long long stitch_global_thread() {
  return static_cast<long long>(stitch_block_linear()) * stitch_block_threads() +
         stitch_thread_linear();
}
STITCH_DEVICE long long stitch_grid_threads() {
  return static_cast<long long>(stitch_grid_blocks()) * stitch_block_threads();
}
STITCH_DEVICE unsigned int stitch_lane_id() { return stitch_thread_linear() % 32u; }
STITCH_DEVICE unsigned int stitch_warp_id() { return stitch_thread_linear() / 32u; }
STITCH_DEVICE long long stitch_ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// 128-bit accesses (the thread composition's vector path, docs/codegen.md): a pointer
// read or written four floats at a time must be 16-byte aligned, which the kernel
// checks before taking that path; stitch_lane4 selects lane k of a float4 without
// indexing it (an indexed float4 would live in local memory).
STITCH_DEVICE bool stitch_aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}
STITCH_DEVICE float stitch_lane4(const float4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}
STITCH_DEVICE void stitch_set_lane4(float4& v, int k, float value) {
  if (k == 0) {
    v.x = value;
  } else if (k == 1) {
    v.y = value;
  } else if (k == 2) {
    v.z = value;
  } else {
    v.w = value;
  }
}
// A run of 4 floats stored at p: one 128-bit store when the kernel found its pointers
// aligned, else element by element (the row compositions' runs).
STITCH_DEVICE void stitch_store4(float* p, const float4& v, bool aligned) {
  if (aligned) {
    *reinterpret_cast<float4*>(p) = v;
  } else {
    p[0] = v.x;
    p[1] = v.y;
    p[2] = v.z;
    p[3] = v.w;
  }
}

struct StitchSumOp {
  STITCH_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct StitchMaxOp {
  STITCH_DEVICE float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct StitchMinOp {
  STITCH_DEVICE float operator()(float a, float b) const { return fminf(a, b); }
};

// Butterfly reduction over the full warp: every lane gets the result.
template <class Op>
STITCH_DEVICE float stitch_warp_reduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}
STITCH_DEVICE float stitch_warp_reduce_sum(float v) { return stitch_warp_reduce(v, StitchSumOp()); }
STITCH_DEVICE float stitch_warp_reduce_max(float v) { return stitch_warp_reduce(v, StitchMaxOp()); }
STITCH_DEVICE float stitch_warp_reduce_min(float v) { return stitch_warp_reduce(v, StitchMinOp()); }

// Block reduction: warps reduce, lane 0 of each warp writes scratch[warp], warp 0 reduces
// the partials. scratch is 32 floats of shared memory (the caller's arena); every thread
// returns the result. The trailing barrier lets the caller reuse scratch immediately.
template <class Op>
STITCH_DEVICE float stitch_block_reduce(float value, float* scratch, Op op, float identity) {
  const unsigned int lane = stitch_lane_id();
  const unsigned int warp = stitch_warp_id();
  const unsigned int warps = (stitch_block_threads() + 31u) / 32u;
  value = stitch_warp_reduce(value, op);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = stitch_warp_reduce(lane < warps ? scratch[lane] : identity, op);
    if (lane == 0) scratch[0] = value;
  }
  __syncthreads();
  const float result = scratch[0];
  __syncthreads();
  return result;
}
STITCH_DEVICE float stitch_block_reduce_sum(float v, float* scratch) {
  return stitch_block_reduce(v, scratch, StitchSumOp(), 0.0f);
}
STITCH_DEVICE float stitch_block_reduce_max(float v, float* scratch) {
  return stitch_block_reduce(v, scratch, StitchMaxOp(), -__int_as_float(0x7f800000));
}
STITCH_DEVICE float stitch_block_reduce_min(float v, float* scratch) {
  return stitch_block_reduce(v, scratch, StitchMinOp(), __int_as_float(0x7f800000));
}

// Loads widen to float, stores narrow from float (the generated code computes in float).
// Integer stores saturate and map NaN to 0, the same on every mode (a plain C++ cast of an
// out-of-range float is undefined on the host, while CUDA's cvt.rzi saturates).
// Two 16-bit floats as one mma fragment register, `lo` in the low half.
STITCH_DEVICE uint32_t stitch_pack16(__half lo, __half hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) |
         (static_cast<uint32_t>(__half_as_ushort(hi)) << 16);
}
STITCH_DEVICE uint32_t stitch_pack16(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}

STITCH_DEVICE float stitch_load_f(const float* p) { return *p; }
STITCH_DEVICE float stitch_load_f(const double* p) { return static_cast<float>(*p); }
STITCH_DEVICE float stitch_load_f(const __half* p) { return __half2float(*p); }
STITCH_DEVICE float stitch_load_f(const __nv_bfloat16* p) { return __bfloat162float(*p); }
STITCH_DEVICE float stitch_load_f(const bool* p) { return *p ? 1.0f : 0.0f; }
#define STITCH_INTEGER_LOAD(T) \
  STITCH_DEVICE float stitch_load_f(const T* p) { return static_cast<float>(*p); }
STITCH_INTEGER_LOAD(signed char)
STITCH_INTEGER_LOAD(unsigned char)
STITCH_INTEGER_LOAD(short)
STITCH_INTEGER_LOAD(unsigned short)
STITCH_INTEGER_LOAD(int)
STITCH_INTEGER_LOAD(unsigned int)
STITCH_INTEGER_LOAD(long)
STITCH_INTEGER_LOAD(unsigned long)
STITCH_INTEGER_LOAD(long long)
STITCH_INTEGER_LOAD(unsigned long long)
#undef STITCH_INTEGER_LOAD

STITCH_DEVICE void stitch_store_f(float* p, float v) { *p = v; }
STITCH_DEVICE void stitch_store_f(double* p, float v) { *p = static_cast<double>(v); }
STITCH_DEVICE void stitch_store_f(__half* p, float v) { *p = __float2half_rn(v); }
STITCH_DEVICE void stitch_store_f(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
STITCH_DEVICE void stitch_store_f(bool* p, float v) { *p = v != 0.0f; }

// lowest and limit are exact floats: the type's minimum and 2^bits (2^(bits-1) if signed).
template <class T>
STITCH_DEVICE T stitch_saturate_float(float v, float lowest, float limit, T min_value,
                                      T max_value) {
  if (!(v == v)) return static_cast<T>(0);
  if (v <= lowest) return min_value;
  if (v >= limit) return max_value;
  return static_cast<T>(v);
}
#define STITCH_INTEGER_STORE(T, lowest, limit, min_value, max_value)           \
  STITCH_DEVICE void stitch_store_f(T* p, float v) {                           \
    *p = stitch_saturate_float<T>(v, lowest, limit, static_cast<T>(min_value), \
                                  static_cast<T>(max_value));                  \
  }
STITCH_INTEGER_STORE(signed char, -128.0f, 128.0f, -128, 127)
STITCH_INTEGER_STORE(unsigned char, 0.0f, 256.0f, 0, 255)
STITCH_INTEGER_STORE(short, -32768.0f, 32768.0f, -32768, 32767)
STITCH_INTEGER_STORE(unsigned short, 0.0f, 65536.0f, 0, 65535)
STITCH_INTEGER_STORE(int, -2147483648.0f, 2147483648.0f, -2147483647 - 1, 2147483647)
STITCH_INTEGER_STORE(unsigned int, 0.0f, 4294967296.0f, 0u, 4294967295u)
STITCH_INTEGER_STORE(long, -9223372036854775808.0f, 9223372036854775808.0f,
                     -9223372036854775807L - 1, 9223372036854775807L)
STITCH_INTEGER_STORE(unsigned long, 0.0f, 18446744073709551616.0f, 0ul, 18446744073709551615ul)
STITCH_INTEGER_STORE(long long, -9223372036854775808.0f, 9223372036854775808.0f,
                     -9223372036854775807LL - 1, 9223372036854775807LL)
STITCH_INTEGER_STORE(unsigned long long, 0.0f, 18446744073709551616.0f, 0ull,
                     18446744073709551615ull)
#undef STITCH_INTEGER_STORE
