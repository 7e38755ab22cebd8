// stitch_emu.h: host emulation of the CUDA subset that stitchopt's generated kernels use.
//
// A generated .cu compiles unchanged as C++20 with `g++ -DSTITCH_EMULATION -I emit/cuda`:
// stitch_prelude.cuh then includes this header instead of the CUDA headers, and the
// program links stitch_cuda_emu (fibers) or stitch_cuda_emu_threads (-DSTITCH_EMU_THREADS).
//
// Semantics (the kernel contract, docs/codegen.md):
//   - Every CUDA thread of a block is its own execution context with real barrier
//     semantics. Fiber mode (default): one fiber per CUDA thread (stitch_emu_fiber.h: a
//     register switch on x86-64, ucontext elsewhere), all fibers of a
//     block on one OS thread; __syncthreads parks the fiber until every thread of the
//     block arrived. Threads mode (STITCH_EMU_THREADS): one std::thread per CUDA thread
//     (a pool the launching thread keeps across blocks and launches),
//     blocking on a mutex and condition variable, which ThreadSanitizer understands. Its
//     happens-before edges are only those CUDA gives: __syncthreads orders the block, a
//     warp collective orders the lanes of that warp (one lock per warp, so two collectives
//     of disjoint masks in one warp also order each other), stitch_grid_sync orders the
//     grid; the launch orders everything before it and the end of the launch everything
//     after it. Nothing else (shared arenas, thread exit, deadlock bookkeeping) does, except
//     that the blocks of a non-cooperative launch run one after another (see below).
//   - Warp collectives (__shfl*_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp)
//     are warp barriers: the lanes named by the mask (restricted to lanes that exist in a
//     partial last warp) deposit their value, the last to arrive computes every lane's
//     result with the PTX shfl rules (segments of `width` lanes; an out-of-segment or
//     absent source lane yields the caller's own value).
//   - Misuse aborts with a message naming the kernel and block: __syncthreads reached at
//     different source lines, threads exited while others wait at a barrier, warp
//     collectives with mismatching masks, stitch_grid_sync outside a cooperative launch,
//     a shared arena above CUDA's 48 KiB static limit.
//   - Non-cooperative launches run blocks in parallel on up to hardware_concurrency() OS
//     threads (env STITCH_EMU_WORKERS overrides; threads mode runs blocks one after
//     another). Cooperative launches run every block concurrently and stitch_grid_sync is
//     a grid-wide barrier; they fail with cudaErrorCooperativeLaunchTooLarge above
//     stitch_max_coresident_blocks() (env STITCH_EMU_MAX_BLOCKS, default 4).
//   - Atomics are sequentially consistent std::atomic_ref operations (stronger than CUDA's
//     relaxed atomics, so that ThreadSanitizer sees the ordering __threadfence gives).
//   - Shared memory is filled with 0xFF bytes (float NaN) at the start of every block so
//     that reading shared memory before writing it shows up in results.
//   - Launches are synchronous; streams are ignored. Kernel arguments are copied into
//     every emulated thread, as CUDA passes them by value.
//
// Hardware counters (STITCH_EMU_COUNTERS, docs/perf-model.md). Built with
// -DSTITCH_EMU_COUNTERS, stitch_emu_counting.cc also records, between stitch_emu_counters_begin
// and stitch_emu_counters_end, what the launches in between would ask of a GPU: every
// global and shared access as a warp-level request (lanes of one warp that execute the
// same access site for the same time form one request), 32-byte sectors, 128-byte lines,
// unique bytes, shared-memory bank conflicts, barriers, warp collectives, atomics and the
// launch geometry. The accesses come from the compiler: kernel files are compiled with
// ThreadSanitizer's instrumentation (-fsanitize=thread --param
// tsan-instrument-func-entry-exit=0; kCounterKernelFlags in runtime_stub/host_backend.cc), so every
// load and store calls __tsan_readN / __tsan_writeN, which stitch_emu_tsan.cc defines: no
// TSan runtime is linked, and nothing in the kernel source changes. Without the macro
// none of this code exists (no cost when off).
#pragma once

#if !defined(STITCH_EMULATION)
#error "stitch_emu.h is the STITCH_EMULATION side of stitch_prelude.cuh; include that instead"
#endif

#include <math.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>

// CUDA declaration keywords a kernel file may still spell out. __shared__ is deliberately
// not defined: shared memory is STITCH_SHARED_ARENA only, which is per block here.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
};
struct uint3 {
  unsigned int x, y, z;
};
// CUDA's vector type for 128-bit loads and stores (generated code reads four floats at
// once from 16-byte aligned addresses). A copy is one 16-byte access, as LDS.128 /
// LDG.128 are on the GPU, so the counting emulation sees one request, not four: the
// copy goes through a GCC vector member (a plain struct copy is split into four
// float loads).
// A 16-byte access to an address that is not 16-byte aligned is a misaligned-address
// fault on the GPU; the emulation aborts on it too (the x86 load would succeed), so a
// kernel that takes a 128-bit path without checking its pointers fails its tests.
typedef float stitch_emu_float_vector4 __attribute__((vector_size(16)));
[[noreturn]] void stitch_emu_misaligned(const void* address);
inline void stitch_emu_check_aligned16(const void* address) {
  if ((reinterpret_cast<uintptr_t>(address) & 15u) != 0) stitch_emu_misaligned(address);
}
struct __align__(16) float4 {
  union {
    struct {
      float x, y, z, w;
    };
    stitch_emu_float_vector4 vector;
  };
  float4() : vector{} {}
  float4(const float4& other) : vector((stitch_emu_check_aligned16(&other), other.vector)) {}
  float4& operator=(const float4& other) {
    stitch_emu_check_aligned16(this);
    stitch_emu_check_aligned16(&other);
    vector = other.vector;
    return *this;
  }
};

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorCooperativeLaunchTooLarge = 720,
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st* cudaStream_t;

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

inline constexpr int warpSize = 32;

namespace stitch_emu {

// The built-in index variables of the emulated thread that runs now.
struct ThreadCoordinates {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
inline thread_local const ThreadCoordinates* tls_coordinates = nullptr;
inline const ThreadCoordinates& coordinates() { return *tls_coordinates; }

// CUDA's static shared memory limit per block: a larger __shared__ array does not link.
inline constexpr size_t kMaxStaticSharedBytes = 48 * 1024;

enum class WarpOp : int { kSync, kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll };

void syncthreads(const char* file, int line);
void grid_sync(unsigned int* counter, const char* file, int line);
uint64_t warp_collective(WarpOp op, unsigned int mask, uint64_t value, int lane_arg, int width);
unsigned char* shared_arena(size_t bytes);
// Blocks of `block_threads` threads that a cooperative launch may run at once: the
// occupancy limit of the counters' StitchEmuLimits while counting, else
// STITCH_EMU_MAX_BLOCKS (default 4).
int max_coresident_blocks(int block_threads);
cudaError_t launch_kernel(const char* name, bool cooperative, dim3 grid, dim3 block,
                          size_t dynamic_shared_bytes, const std::function<void()>& body);

#if defined(STITCH_EMU_COUNTERS)
// One access of `size` bytes at `address` by the calling emulated thread, from the
// access site `site` (the return address of its __tsan_* hook, stitch_emu_tsan.cc):
// counted when counting is on and the address lies in a counted region or the block's
// shared arena.
void record_access(uintptr_t address, uint32_t size, bool store, uintptr_t site);
// An atomic's own accesses are counted as one atomic, not as a load and a store.
void atomic_begin(const void* address);
void atomic_end();
struct AtomicScope {
  explicit AtomicScope(const void* address) { atomic_begin(address); }
  ~AtomicScope() { atomic_end(); }
  AtomicScope(const AtomicScope&) = delete;
  AtomicScope& operator=(const AtomicScope&) = delete;
};
#define STITCH_EMU_COUNT_ATOMIC(address) ::stitch_emu::AtomicScope stitch_emu_atomic_scope(address)
#else
#define STITCH_EMU_COUNT_ATOMIC(address) static_cast<void>(0)
#endif

template <class... Params, class... Args>
cudaError_t launch(const char* name, void (*kernel)(Params...), bool cooperative, dim3 grid,
                   dim3 block, size_t dynamic_shared_bytes, cudaStream_t, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong arity");
  // Converted to the parameter types once, as a CUDA launch does; copied again into
  // every emulated thread by the call.
  return launch_kernel(name, cooperative, grid, block, dynamic_shared_bytes,
                       [kernel, ... params = static_cast<Params>(std::forward<Args>(args))]() {
                         kernel(params...);
                       });
}

template <class T>
uint64_t to_payload(T value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t),
                "warp shuffles move values of at most 8 bytes");
  uint64_t payload = 0;
  std::memcpy(&payload, &value, sizeof(T));
  return payload;
}
template <class T>
T from_payload(uint64_t payload) {
  T value;
  std::memcpy(&value, &payload, sizeof(T));
  return value;
}
// The CUDA shuffles and votes are warp collectives on these payloads.
template <class T>
T shuffle(WarpOp op, unsigned int mask, T value, int lane_arg, int width) {
  return from_payload<T>(warp_collective(op, mask, to_payload(value), lane_arg, width));
}
inline uint64_t vote(WarpOp op, unsigned int mask, int predicate) {
  return warp_collective(op, mask, predicate != 0, 0, warpSize);
}

// IEEE binary16 / bfloat16 conversions with round-to-nearest-even, bit-identical to
// cuda_fp16.hpp / cuda_bf16.hpp: NaN becomes the canonical 0x7fff, overflow rounds to
// infinity, subnormals are kept; widening maps NaN to 0x7fffffff like CUDA's host path.
inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline uint16_t float_to_half_bits(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return magnitude == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu;
  if (magnitude > 0x477fefffu) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520
  if (magnitude < 0x33000001u) return static_cast<uint16_t>(sign);            // <= 2^-25
  uint32_t result;
  uint32_t remainder;
  if (magnitude >= 0x38800000u) {  // normal half
    remainder = magnitude << 19;
    result = (magnitude - 0x38000000u) >> 13;
  } else {  // subnormal half
    const uint32_t shift = 0x7eu - (magnitude >> 23);
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    remainder = mantissa << (32u - shift);
    result = mantissa >> shift;
  }
  if (remainder > 0x80000000u || (remainder == 0x80000000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}
inline float half_bits_to_float(uint16_t half) {
  uint32_t sign = (half >> 15) & 1u;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = (half & 0x3ffu) << 13;
  if (exponent == 0x1fu) {
    if (mantissa != 0u) return bits_float(0x7fffffffu);
    exponent = 0xffu;
  } else if (exponent == 0u) {
    if (mantissa != 0u) {
      exponent = 0x71u;
      uint32_t msb;
      do {
        msb = mantissa & 0x400000u;
        mantissa <<= 1;
        --exponent;
      } while (msb == 0u);
      mantissa &= 0x7fffffu;
    }
  } else {
    exponent += 0x70u;
  }
  return bits_float((sign << 31) | (exponent << 23) | mantissa);
}
inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  uint32_t result = x >> 16;
  const uint32_t remainder = x << 16;
  if (remainder > 0x80000000u || (remainder == 0x80000000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(result);
}
inline float bfloat16_bits_to_float(uint16_t bits) {
  return bits_float(static_cast<uint32_t>(bits) << 16);
}

}  // namespace stitch_emu

#if defined(STITCH_EMU_COUNTERS)
// artifact/stitch_emu_counters.h, copied beside this file in the emulation's build
// directory (a neutral ABI: the perf model reads it, the runtime fetches it).
#include "stitch_emu_counters.h"
#endif

#define threadIdx (::stitch_emu::coordinates().thread_idx)
#define blockIdx (::stitch_emu::coordinates().block_idx)
#define blockDim (::stitch_emu::coordinates().block_dim)
#define gridDim (::stitch_emu::coordinates().grid_dim)

#define __syncthreads() ::stitch_emu::syncthreads(__FILE__, __LINE__)

inline void __syncwarp(unsigned int mask = 0xffffffffu) {
  ::stitch_emu::warp_collective(::stitch_emu::WarpOp::kSync, mask, 0, 0, warpSize);
}
template <class T>
T __shfl_sync(unsigned int mask, T value, int src_lane, int width = warpSize) {
  return ::stitch_emu::shuffle(::stitch_emu::WarpOp::kShflIdx, mask, value, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned int mask, T value, unsigned int delta, int width = warpSize) {
  return ::stitch_emu::shuffle(::stitch_emu::WarpOp::kShflUp, mask, value, static_cast<int>(delta),
                               width);
}
template <class T>
T __shfl_down_sync(unsigned int mask, T value, unsigned int delta, int width = warpSize) {
  return ::stitch_emu::shuffle(::stitch_emu::WarpOp::kShflDown, mask, value,
                               static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned int mask, T value, int lane_mask, int width = warpSize) {
  return ::stitch_emu::shuffle(::stitch_emu::WarpOp::kShflXor, mask, value, lane_mask, width);
}
inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
  return static_cast<unsigned int>(
      ::stitch_emu::vote(::stitch_emu::WarpOp::kBallot, mask, predicate));
}
inline int __any_sync(unsigned int mask, int predicate) {
  return static_cast<int>(::stitch_emu::vote(::stitch_emu::WarpOp::kAny, mask, predicate));
}
inline int __all_sync(unsigned int mask, int predicate) {
  return static_cast<int>(::stitch_emu::vote(::stitch_emu::WarpOp::kAll, mask, predicate));
}

// Every emulated atomic is a seq_cst read-modify-write, which already orders the plain
// accesses around it the way __threadfence + atomic does on the GPU; the fence is kept for
// non-atomic flag patterns. ThreadSanitizer does not model fences (GCC rejects them under
// -fsanitize=thread), so there it relies on the atomics alone.
#if defined(__SANITIZE_THREAD__)
inline void __threadfence() {}
#else
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif
inline void __threadfence_block() { __threadfence(); }

template <class T>
T __ldg(const T* address) {
  return *address;
}

// Atomics: the overloads CUDA provides for the types generated code uses.
#define STITCH_EMU_ATOMIC_REF(T, address) std::atomic_ref<T>(*(address))
inline int atomicAdd(int* a, int v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(int, a).fetch_add(v);
}
inline unsigned int atomicAdd(unsigned int* a, unsigned int v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(unsigned int, a).fetch_add(v);
}
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(unsigned long long, a).fetch_add(v);
}
inline float atomicAdd(float* a, float v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(float, a).fetch_add(v);
}
inline double atomicAdd(double* a, double v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(double, a).fetch_add(v);
}
template <class T>
T stitch_emu_atomic_update(T* address, T value, bool take_max) {
  STITCH_EMU_COUNT_ATOMIC(address);
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while ((take_max ? value > old : value < old) && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}
inline int atomicMax(int* a, int v) { return stitch_emu_atomic_update(a, v, true); }
inline unsigned int atomicMax(unsigned int* a, unsigned int v) {
  return stitch_emu_atomic_update(a, v, true);
}
inline int atomicMin(int* a, int v) { return stitch_emu_atomic_update(a, v, false); }
inline unsigned int atomicMin(unsigned int* a, unsigned int v) {
  return stitch_emu_atomic_update(a, v, false);
}
template <class T>
T stitch_emu_atomic_cas(T* address, T compare, T value) {
  STITCH_EMU_COUNT_ATOMIC(address);
  STITCH_EMU_ATOMIC_REF(T, address).compare_exchange_strong(compare, value);
  return compare;
}
inline int atomicCAS(int* a, int c, int v) { return stitch_emu_atomic_cas(a, c, v); }
inline unsigned int atomicCAS(unsigned int* a, unsigned int c, unsigned int v) {
  return stitch_emu_atomic_cas(a, c, v);
}
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long c,
                                    unsigned long long v) {
  return stitch_emu_atomic_cas(a, c, v);
}
inline int atomicExch(int* a, int v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(int, a).exchange(v);
}
inline unsigned int atomicExch(unsigned int* a, unsigned int v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(unsigned int, a).exchange(v);
}
inline float atomicExch(float* a, float v) {
  STITCH_EMU_COUNT_ATOMIC(a);
  return STITCH_EMU_ATOMIC_REF(float, a).exchange(v);
}
#undef STITCH_EMU_ATOMIC_REF

// Device math that the host C library lacks, and CUDA's integer/float min and max.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline unsigned int __float_as_uint(float x) { return ::stitch_emu::float_bits(x); }
inline float __uint_as_float(unsigned int x) { return ::stitch_emu::bits_float(x); }
inline int __float_as_int(float x) { return static_cast<int>(::stitch_emu::float_bits(x)); }
inline float __int_as_float(int x) { return ::stitch_emu::bits_float(static_cast<uint32_t>(x)); }
#define STITCH_EMU_MIN_MAX(T)                      \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
STITCH_EMU_MIN_MAX(int)
STITCH_EMU_MIN_MAX(unsigned int)
STITCH_EMU_MIN_MAX(long)
STITCH_EMU_MIN_MAX(unsigned long)
STITCH_EMU_MIN_MAX(long long)
STITCH_EMU_MIN_MAX(unsigned long long)
#undef STITCH_EMU_MIN_MAX
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// 16-bit float storage types. Arithmetic happens in float (operator float), as in the
// generated code; the conversions round to nearest even like the CUDA intrinsics.
// STITCH_EMU_FLOAT16(T, name) defines struct T over stitch_emu::float_to_<name>_bits and
// <name>_bits_to_float, and CUDA's __float2<name>[_rn], __<name>2float,
// __<name>_as_ushort and __ushort_as_<name>.
#define STITCH_EMU_FLOAT16(T, name)                                            \
  struct T {                                                                   \
    uint16_t __x;                                                              \
    T() = default;                                                             \
    T(float value) : __x(::stitch_emu::float_to_##name##_bits(value)) {}       \
    operator float() const { return ::stitch_emu::name##_bits_to_float(__x); } \
  };                                                                           \
  inline T __float2##name##_rn(float value) { return T(value); }               \
  inline T __float2##name(float value) { return T(value); }                    \
  inline float __##name##2float(T value) { return static_cast<float>(value); } \
  inline unsigned short __##name##_as_ushort(T value) { return value.__x; }    \
  inline T __ushort_as_##name(unsigned short bits) {                           \
    T value;                                                                   \
    value.__x = bits;                                                          \
    return value;                                                              \
  }
STITCH_EMU_FLOAT16(__half, half)
STITCH_EMU_FLOAT16(__nv_bfloat16, bfloat16)
#undef STITCH_EMU_FLOAT16

// The kernel contract's portable primitives (stitch_prelude.cuh has the CUDA side).
#define STITCH_KERNEL extern "C"
// STITCH_ASSUME tells nvcc what it may assume; the emulation checks nothing.
#define STITCH_ASSUME(condition) static_cast<void>(0)
#define STITCH_DEVICE inline

namespace stitch_emu {
// mma.sync m16n8k16 with float accumulators, emulated: every lane gathers the A row
// and B column elements its four accumulators need from the lanes PTX's fragment
// layouts put them in (stitch_prelude.cuh), by shuffles, and accumulates the exact
// products in k order in float. A warp collective like the instruction: all 32 lanes
// call it with the same operand shapes.
template <class Decode>
inline void mma_m16n8k16(float d[4], const uint32_t a[4], const uint32_t b[2], Decode decode) {
  const int lane = static_cast<int>(threadIdx.x % 32u);
  const int group = lane / 4, quad = lane % 4;
  for (int k = 0; k < 16; ++k) {
    const int high = k & 1;
    // A[group][k] and A[group + 8][k]: lane 4 group + (k % 8) / 2, registers 0/1 or 2/3.
    const int a_lane = group * 4 + (k % 8) / 2;
    const uint32_t a_top = __shfl_sync(0xffffffffu, a[k >= 8 ? 2 : 0], a_lane);
    const uint32_t a_bottom = __shfl_sync(0xffffffffu, a[k >= 8 ? 3 : 1], a_lane);
    for (int x = 0; x < 2; ++x) {
      // B[k][2 quad + x]: lane 4 (2 quad + x) + (k % 8) / 2, register k / 8.
      const uint32_t bits =
          __shfl_sync(0xffffffffu, b[k >= 8 ? 1 : 0], (2 * quad + x) * 4 + (k % 8) / 2);
      const float b_value = decode(bits, high);
      d[x] += decode(a_top, high) * b_value;
      d[2 + x] += decode(a_bottom, high) * b_value;
    }
  }
}
}  // namespace stitch_emu

inline void stitch_mma_m16n8k16_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  ::stitch_emu::mma_m16n8k16(d, a, b, [](uint32_t bits, int high) {
    return ::stitch_emu::half_bits_to_float(
        static_cast<uint16_t>(high ? bits >> 16 : bits & 0xffffu));
  });
}
inline void stitch_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  ::stitch_emu::mma_m16n8k16(d, a, b, [](uint32_t bits, int high) {
    return ::stitch_emu::bfloat16_bits_to_float(
        static_cast<uint16_t>(high ? bits >> 16 : bits & 0xffffu));
  });
}
// TF32 (stitch_prelude.cuh): cvt.rna.tf32.f32, then mma.sync m16n8k8 over operands
// whose low 13 bits the tensor core ignores; the products of two TF32 values are exact
// in float, accumulated in k order.
inline uint32_t stitch_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
  return bits;
}
inline float stitch_tf32_value(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline float stitch_round_tf32(float x) { return stitch_tf32_value(stitch_tf32(x)); }
inline void stitch_mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  const int lane = static_cast<int>(threadIdx.x % 32u);
  const int group = lane / 4, quad = lane % 4;
  const auto decode = [](uint32_t bits) { return stitch_tf32_value(bits & 0xffffe000u); };
  for (int k = 0; k < 8; ++k) {
    // A[group][k] and A[group + 8][k]: lane 4 group + k % 4, registers 0/1 (k < 4) or 2/3.
    const int a_lane = group * 4 + k % 4;
    const float a_top = decode(__shfl_sync(0xffffffffu, a[k >= 4 ? 2 : 0], a_lane));
    const float a_bottom = decode(__shfl_sync(0xffffffffu, a[k >= 4 ? 3 : 1], a_lane));
    for (int x = 0; x < 2; ++x) {
      // B[k][2 quad + x]: lane 4 (2 quad + x) + k % 4, register k / 4.
      const float b_value =
          decode(__shfl_sync(0xffffffffu, b[k >= 4 ? 1 : 0], (2 * quad + x) * 4 + k % 4));
      d[x] += a_top * b_value;
      d[2 + x] += a_bottom * b_value;
    }
  }
}
#define STITCH_SHARED_ARENA(name, bytes)                                     \
  static_assert((bytes) <= ::stitch_emu::kMaxStaticSharedBytes,              \
                "shared arena above CUDA's 48 KiB static __shared__ limit"); \
  unsigned char* name = ::stitch_emu::shared_arena(bytes)
#define STITCH_LAUNCH(kernel, grid, block, shared_dynamic_bytes, stream, ...)     \
  ::stitch_emu::launch(#kernel, kernel, false, grid, block, shared_dynamic_bytes, \
                       stream __VA_OPT__(, ) __VA_ARGS__)
#define STITCH_LAUNCH_COOPERATIVE(kernel, grid, block, shared_dynamic_bytes, stream, ...) \
  ::stitch_emu::launch(#kernel, kernel, true, grid, block, shared_dynamic_bytes,          \
                       stream __VA_OPT__(, ) __VA_ARGS__)

inline void stitch_grid_sync_at(unsigned int* counter, const char* file, int line) {
  ::stitch_emu::grid_sync(counter, file, line);
}
#define stitch_grid_sync(counter) stitch_grid_sync_at((counter), __FILE__, __LINE__)

template <class Kernel>
int stitch_max_coresident_blocks(Kernel*, int block_threads, size_t /*shared_bytes*/) {
  return ::stitch_emu::max_coresident_blocks(block_threads);
}
