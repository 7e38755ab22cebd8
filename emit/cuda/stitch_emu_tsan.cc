// stitch_emu_tsan.cc: the hardware counters' access hooks (STITCH_EMU_COUNTERS,
// stitch_emu.h). Kernel files of a counting build are compiled with ThreadSanitizer's
// instrumentation, so each of their loads and stores calls one of the entry points
// below, which hands it to stitch_emu::record_access (stitch_emu_counting.cc) with the address,
// its size and the call's return address (the access site). Compiled and linked beside
// stitch_emu.cc and stitch_emu_counting.cc in counting builds only (runtime_stub/host_backend.cc,
// tests/cuda_emu/tests.cmake); without the macro it is empty.
#include "stitch_emu.h"

#if defined(STITCH_EMU_COUNTERS)
#include <cstdint>

extern "C" {

// ThreadSanitizer's instrumentation entry points, called by every load and store of a
// kernel file compiled with -fsanitize=thread --param tsan-instrument-func-entry-exit=0
// (unlike AddressSanitizer's checks, GCC removes none of them as redundant). No TSan
// runtime is linked: these are the only definitions. Atomics arrive as __tsan_atomic*
// calls, performed here with the same builtins (sequentially consistent, as the
// emulation's atomics are) and counted by the AtomicScope of stitch_emu.h, not as
// accesses.
#define STITCH_EMU_SITE reinterpret_cast<uintptr_t>(__builtin_return_address(0))
#define STITCH_EMU_TSAN_ACCESS(size)                                                               \
  void __tsan_read##size(void* address) {                                                          \
    stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), size, false, STITCH_EMU_SITE); \
  }                                                                                                \
  void __tsan_write##size(void* address) {                                                         \
    stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), size, true, STITCH_EMU_SITE);  \
  }                                                                                                \
  void __tsan_unaligned_read##size(void* address) {                                                \
    stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), size, false, STITCH_EMU_SITE); \
  }                                                                                                \
  void __tsan_unaligned_write##size(void* address) {                                               \
    stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), size, true, STITCH_EMU_SITE);  \
  }
STITCH_EMU_TSAN_ACCESS(1)
STITCH_EMU_TSAN_ACCESS(2)
STITCH_EMU_TSAN_ACCESS(4)
STITCH_EMU_TSAN_ACCESS(8)
STITCH_EMU_TSAN_ACCESS(16)
#undef STITCH_EMU_TSAN_ACCESS
void __tsan_read_range(void* address, unsigned long size) {
  stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), static_cast<uint32_t>(size),
                            false, STITCH_EMU_SITE);
}
void __tsan_write_range(void* address, unsigned long size) {
  stitch_emu::record_access(reinterpret_cast<uintptr_t>(address), static_cast<uint32_t>(size), true,
                            STITCH_EMU_SITE);
}
#undef STITCH_EMU_SITE
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// The atomic operations, for each width; the memory-order arguments are ignored (every
// one is sequentially consistent).
#define STITCH_EMU_TSAN_ATOMICS(bits, T)                                                    \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                  \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
  }                                                                                         \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                               \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
  }                                                                                         \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                               \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                              \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                              \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                              \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                               \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                              \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) {                             \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {   \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {     \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);  \
  }                                                                                         \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int, int) {         \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    return c;                                                                               \
  }
STITCH_EMU_TSAN_ATOMICS(8, unsigned char)
STITCH_EMU_TSAN_ATOMICS(16, unsigned short)
STITCH_EMU_TSAN_ATOMICS(32, unsigned int)
STITCH_EMU_TSAN_ATOMICS(64, unsigned long long)
#undef STITCH_EMU_TSAN_ATOMICS

}  // extern "C"
#endif  // STITCH_EMU_COUNTERS
