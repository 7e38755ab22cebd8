// stitch_emu.cc: the execution engine behind stitch_emu.h (fibers, or threads with
// -DSTITCH_EMU_THREADS).
//
// A launch is split into sync domains: the threads that can wait on each other. A
// non-cooperative launch has one domain per block (blocks are independent); a cooperative
// launch has one domain holding the whole grid, because stitch_grid_sync waits for every
// block. Both modes share the barrier bookkeeping below and differ only in how a waiting
// thread parks:
//   1. A thread reaching a barrier records what it waits for (Wait::kBlockBarrier and the
//      source line, Wait::kWarp and its collective, Wait::kGrid).
//   2. The arrival that completes the barrier (the last thread of the block, the last lane
//      named by the warp mask, the last thread of the grid) computes the results, clears
//      every participant's wait and wakes them; it continues without parking.
//   3. Any other arrival parks: fiber mode switches straight to the next runnable fiber of
//      the domain; threads mode waits on the thread's condition variable under the lock of
//      the barrier it waits at.
//   4. Deadlock: when every live thread of a domain is parked, no arrival can ever complete
//      a barrier (arrivals are the only releases), so the emulator aborts and prints what
//      every thread waits for. Exited threads count as never arriving.
//
// Threads mode runs under ThreadSanitizer, which must see a happens-before edge exactly
// where CUDA orders memory, or a missing barrier goes unreported. So each barrier has its
// own lock: __syncthreads the block's mutex (orders the block), warp collectives the
// warp's mutex (orders the lanes of that warp only), stitch_grid_sync the domain's mutex
// (orders the grid). Everything else that threads share orders nothing: the live and
// parked counts are one relaxed atomic word (step 4 needs both in one snapshot), the wait
// states that deadlock reports print are relaxed atomics, shared arenas are poisoned
// before the threads start, and a thread's exit takes no lock.
#include "stitch_emu.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(STITCH_EMU_COUNTERS)
#include <dlfcn.h>

#include <map>
#include <unordered_map>
#if defined(STITCH_EMU_THREADS)
#error "the hardware counters need the fiber emulation (one OS thread per domain)"
#endif
#endif

#if defined(STITCH_EMU_THREADS)
#include <condition_variable>
#include <mutex>
#endif

namespace stitch_emu {
namespace {

constexpr unsigned int kMaxBlockThreads = 1024;

enum class Wait : uint8_t { kNone, kBlockBarrier, kWarp, kGrid, kDone };

struct Domain;
struct Block;

// A field that any thread may read without holding the lock its writer held (deadlock
// reports, the divergence checks): relaxed, so that it creates no happens-before edge.
template <class T>
class Relaxed {
 public:
  Relaxed(T value = T{}) : value_(value) {}
  Relaxed& operator=(T value) {
    value_.store(value, std::memory_order_relaxed);
    return *this;
  }
  operator T() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<T> value_;
};

struct EmuThread : ThreadCoordinates {
  Domain* domain = nullptr;
  Block* block = nullptr;
  unsigned int linear = 0;  // thread index within its block
  unsigned int lane = 0;
  unsigned int domain_warp = 0;  // warp index within the domain (the counters' requests)
  // What the thread waits for. Set by the thread on arrival and cleared (kNone) by the
  // arrival that releases it, both under the lock of that barrier.
  Relaxed<Wait> wait = Wait::kNone;
  Relaxed<const char*> file = nullptr;  // the barrier it waits at
  Relaxed<int> line = 0;
  Relaxed<WarpOp> op = WarpOp::kSync;
  Relaxed<unsigned int> mask = 0u;
  // The warp collective it takes part in, under its warp's lock.
  bool at_warp = false;
  uint64_t in = 0;
  int lane_arg = 0;
  int width = 0;
  uint64_t out = 0;
#if defined(STITCH_EMU_THREADS)
  std::condition_variable wake;
#else
  ucontext_t context;
#endif
};

#if defined(STITCH_EMU_THREADS)
constexpr unsigned int kMaxBlockWarps = kMaxBlockThreads / 32;
#endif

struct Block {
  EmuThread* threads = nullptr;  // block_threads entries, by linear index
  unsigned int thread_count = 0;
  unsigned int at_barrier = 0;  // under barrier_mutex
  unsigned char* arena = nullptr;
  size_t arena_bytes = 0;  // requested by the kernel; 0 until the first request
  bool counted = true;     // the counters record its requests (block sampling)
#if defined(STITCH_EMU_THREADS)
  std::mutex barrier_mutex;                 // __syncthreads
  std::mutex warp_mutexes[kMaxBlockWarps];  // warp collectives, one per warp
#endif
};

// Domain::counts packs the live threads (high half) and the parked ones (low half) into
// one word, so that a deadlock check sees both at the same instant.
constexpr uint64_t kOneLive = uint64_t{1} << 32;
unsigned int live_count(uint64_t counts) { return static_cast<unsigned int>(counts >> 32); }
unsigned int parked_count(uint64_t counts) { return static_cast<unsigned int>(counts); }

struct Domain {
  const char* kernel = nullptr;
  bool cooperative = false;
  const std::function<void()>* body = nullptr;
  std::unique_ptr<Block[]> blocks;
  unsigned int block_count = 0;
  unsigned int block_capacity = 0;
  EmuThread* threads = nullptr;
  unsigned int thread_count = 0;
  // Live (not returned) and parked (live, waiting at a barrier) threads; see kOneLive.
  // Relaxed read-modify-writes: the counts order nothing.
  std::atomic<uint64_t> counts{0};
  unsigned int at_grid_barrier = 0;  // under grid_mutex
#if defined(STITCH_EMU_THREADS)
  std::mutex grid_mutex;  // stitch_grid_sync
#else
  std::vector<EmuThread*> run_queue;  // FIFO of runnable fibers; head index below
  size_t run_head = 0;
#endif
};

thread_local EmuThread* t_current = nullptr;
thread_local cudaError_t t_last_error = cudaSuccess;

// Makes t the emulated thread that runs on this OS thread now (nullptr: none).
void enter(EmuThread* t) {
  t_current = t;
  tls_coordinates = t;
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "stitch_emu: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string coords(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

std::string where(const EmuThread& t) {
  return std::string("kernel ") + t.domain->kernel + " block " + coords(t.block_idx);
}

EmuThread& current(const char* primitive) {
  if (t_current == nullptr) {
    fail(std::string(primitive) + " called outside an emulated kernel launch");
  }
  return *t_current;
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSync:
      return "__syncwarp";
    case WarpOp::kShflIdx:
      return "__shfl_sync";
    case WarpOp::kShflUp:
      return "__shfl_up_sync";
    case WarpOp::kShflDown:
      return "__shfl_down_sync";
    case WarpOp::kShflXor:
      return "__shfl_xor_sync";
    case WarpOp::kBallot:
      return "__ballot_sync";
    case WarpOp::kAny:
      return "__any_sync";
    case WarpOp::kAll:
      return "__all_sync";
  }
  return "?";
}

std::string describe_wait(const EmuThread& t) {
  char buffer[160];
  const Wait wait = t.wait;
  switch (wait) {
    case Wait::kNone:
      return "running";
    case Wait::kDone:
      return "exited";
    case Wait::kBlockBarrier:
    case Wait::kGrid: {
      const char* file = t.file;
      const int line = t.line;
      return std::string(wait == Wait::kGrid ? "waiting at stitch_grid_sync ("
                                             : "waiting at __syncthreads (") +
             file + ":" + std::to_string(line) + ")";
    }
    case Wait::kWarp: {
      const unsigned int mask = t.mask;
      std::snprintf(buffer, sizeof buffer, "waiting at %s with mask 0x%08x", op_name(t.op), mask);
      return buffer;
    }
  }
  return "?";
}

// Prints every block's threads grouped into runs of equal state, then aborts.
[[noreturn]] void report_deadlock(Domain& d) {
  std::string message = std::string("deadlock in kernel ") + d.kernel +
                        ": every live thread waits at a barrier that can no longer complete "
                        "(divergent barrier, or threads exited before it)";
  for (unsigned int bi = 0; bi < d.block_count; ++bi) {
    const Block& b = d.blocks[bi];
    message += "\n  block " + coords(b.threads[0].block_idx) + ":";
    unsigned int start = 0;
    for (unsigned int i = 1; i <= b.thread_count; ++i) {
      if (i < b.thread_count && describe_wait(b.threads[i]) == describe_wait(b.threads[start])) {
        continue;
      }
      message += "\n    threads " + std::to_string(start) + "-" + std::to_string(i - 1) + ": " +
                 describe_wait(b.threads[start]);
      start = i;
    }
  }
  fail(message);
}

// --- parking and waking: the only mode-specific part of the barrier logic ---------------

// Counts t as parked; aborts when that leaves no live thread that could release anyone.
void count_parked(EmuThread& t) {
  Domain& d = *t.domain;
  const uint64_t counts = d.counts.fetch_add(1, std::memory_order_relaxed) + 1;
  if (parked_count(counts) == live_count(counts)) report_deadlock(d);
}

#if defined(STITCH_EMU_THREADS)

// The lock of one barrier: the block's, one warp's, or the grid's.
using BarrierLock = std::unique_lock<std::mutex>;
BarrierLock lock_block_barrier(Block& b) { return BarrierLock(b.barrier_mutex); }
BarrierLock lock_warp(Block& b, unsigned int warp) { return BarrierLock(b.warp_mutexes[warp]); }
BarrierLock lock_grid_barrier(Domain& d) { return BarrierLock(d.grid_mutex); }

void wake(EmuThread& t) { t.wake.notify_one(); }

// `lock` is the lock of the barrier t arrived at, which its releaser holds too.
void park(EmuThread& t, BarrierLock& lock) {
  count_parked(t);
  t.wake.wait(lock, [&t] { return t.wait == Wait::kNone; });
}

#else

// Fibers never run concurrently within a domain, so the locks are empty.
struct BarrierLock {};
BarrierLock lock_block_barrier(Block&) { return {}; }
BarrierLock lock_warp(Block&, unsigned int) { return {}; }
BarrierLock lock_grid_barrier(Domain&) { return {}; }

void wake(EmuThread& t) { t.domain->run_queue.push_back(&t); }

EmuThread* next_runnable(Domain& d) {
  if (d.run_head == d.run_queue.size()) return nullptr;
  EmuThread* next = d.run_queue[d.run_head++];
  if (d.run_head == d.run_queue.size()) {
    d.run_queue.clear();
    d.run_head = 0;
  }
  return next;
}

void park(EmuThread& t, BarrierLock&) {
  Domain& d = *t.domain;
  count_parked(t);
  EmuThread* next = next_runnable(d);
  if (next == nullptr) report_deadlock(d);  // unreachable while the counts are right
  enter(next);
  swapcontext(&t.context, &next->context);  // resumed by whoever called enter(&t)
}

#endif

// Clears t's wait; wakes it unless it is the caller, which completed the barrier, was
// never counted as parked, and continues on its own. The caller holds the barrier's lock.
void release(EmuThread& t, const EmuThread& self) {
  t.wait = Wait::kNone;
  if (&t == &self) return;
  t.domain->counts.fetch_sub(1, std::memory_order_relaxed);
  wake(t);
}

// t arrives at a block or grid barrier (`lock` held) that `total` threads must reach;
// `arrived` counts them. False: t parked until the barrier completed. True: t completed
// it, and the caller checks and releases the others.
bool arrive(EmuThread& t, BarrierLock& lock, Wait wait, const char* file, int line,
            unsigned int& arrived, unsigned int total) {
  t.wait = wait;
  t.file = file;
  t.line = line;
  if (++arrived < total) {
    park(t, lock);
    return false;
  }
  arrived = 0;
  return true;
}

// --- warp collectives -------------------------------------------------------------------

// Lanes that exist in warp `warp` of a block with `thread_count` threads.
unsigned int existing_lanes(unsigned int warp, unsigned int thread_count) {
  const unsigned int first = warp * 32;
  const unsigned int count = std::min(32u, thread_count - first);
  return count == 32 ? 0xffffffffu : ((1u << count) - 1u);
}

// The source lane of a shuffle, by the PTX shfl pseudo-code (segmask = 32 - width).
unsigned int shuffle_source(const EmuThread& t) {
  const int lane = static_cast<int>(t.lane);
  const int segmask = 32 - t.width;
  const int b = t.lane_arg;
  int max_lane;
  int j;
  bool valid;
  switch (t.op) {
    case WarpOp::kShflUp:
      max_lane = lane & segmask;
      j = lane - b;
      valid = j >= max_lane;
      break;
    case WarpOp::kShflDown:
      max_lane = (lane & segmask) | (31 & ~segmask);
      j = lane + b;
      valid = j <= max_lane;
      break;
    case WarpOp::kShflXor:
      max_lane = (lane & segmask) | (31 & ~segmask);
      j = lane ^ (b & 31);
      valid = j <= max_lane;
      break;
    default:  // kShflIdx
      max_lane = (lane & segmask) | (31 & ~segmask);
      j = (lane & segmask) | (b & 31 & ~segmask);
      valid = j <= max_lane;
      break;
  }
  return static_cast<unsigned int>(valid ? j : lane);
}

void complete_warp_collective(EmuThread* warp_threads, unsigned int required,
                              const EmuThread& self) {
  unsigned int votes = 0;
  for (unsigned int l = 0; l < 32; ++l) {
    if ((required >> l) & 1u && warp_threads[l].in != 0) votes |= 1u << l;
  }
  for (unsigned int l = 0; l < 32; ++l) {
    if (!((required >> l) & 1u)) continue;
    EmuThread& t = warp_threads[l];
    switch (t.op) {
      case WarpOp::kSync:
        t.out = 0;
        break;
      case WarpOp::kBallot:
        t.out = votes;
        break;
      case WarpOp::kAny:
        t.out = votes != 0;
        break;
      case WarpOp::kAll:
        t.out = votes == required;
        break;
      default: {
        const unsigned int source = shuffle_source(t);
        t.out = ((required >> source) & 1u) ? warp_threads[source].in : t.in;
        break;
      }
    }
  }
  for (unsigned int l = 0; l < 32; ++l) {
    if (!((required >> l) & 1u)) continue;
    warp_threads[l].at_warp = false;
    release(warp_threads[l], self);
  }
}

// --- running the threads of a domain ----------------------------------------------------

// Takes no lock: a returning thread orders nothing (its memory reaches the host through
// the join, or the fiber switch, at the end of the launch).
void finish_thread(EmuThread& t) {
  Domain& d = *t.domain;
  t.wait = Wait::kDone;
  const uint64_t counts = d.counts.fetch_sub(kOneLive, std::memory_order_relaxed) - kOneLive;
  if (live_count(counts) != 0 && parked_count(counts) == live_count(counts)) {
    report_deadlock(d);
  }
}

bool block_counted(unsigned long long linear_block);  // the counters' block sampling

// Lays out the threads of `block_count` consecutive blocks starting at linear block
// `first_block` into d (threads must hold block_count * block_threads entries).

void init_domain(Domain& d, const char* kernel, bool cooperative, const std::function<void()>& body,
                 dim3 grid, dim3 block, unsigned long long first_block, unsigned int block_count,
                 EmuThread* threads, unsigned char* arenas) {
  const unsigned int block_threads = block.x * block.y * block.z;
  d.kernel = kernel;
  d.cooperative = cooperative;
  d.body = &body;
  if (block_count > d.block_capacity) {
    d.blocks = std::make_unique<Block[]>(block_count);
    d.block_capacity = block_count;
  }
  d.block_count = block_count;
  d.threads = threads;
  d.thread_count = block_count * block_threads;
  d.counts.store(d.thread_count * kOneLive, std::memory_order_relaxed);
  d.at_grid_barrier = 0;
  for (unsigned int b = 0; b < block_count; ++b) {
    const unsigned long long linear_block = first_block + b;
    const uint3 block_idx{static_cast<unsigned int>(linear_block % grid.x),
                          static_cast<unsigned int>(linear_block / grid.x % grid.y),
                          static_cast<unsigned int>(linear_block / grid.x / grid.y)};
    Block& blk = d.blocks[b];
    blk.threads = threads + static_cast<size_t>(b) * block_threads;
    blk.thread_count = block_threads;
    blk.at_barrier = 0;
    blk.arena = arenas + static_cast<size_t>(b) * kMaxStaticSharedBytes;
    blk.arena_bytes = 0;
    blk.counted = block_counted(linear_block);
    for (unsigned int i = 0; i < block_threads; ++i) {
      EmuThread& t = blk.threads[i];
      t.thread_idx = uint3{i % block.x, i / block.x % block.y, i / block.x / block.y};
      t.block_idx = block_idx;
      t.block_dim = block;
      t.grid_dim = grid;
      t.domain = &d;
      t.block = &blk;
      t.linear = i;
      t.lane = i % 32;
      t.domain_warp = b * ((block_threads + 31) / 32) + i / 32;
      t.wait = Wait::kNone;
      t.at_warp = false;
      t.in = 0;
      t.out = 0;
    }
  }
}

#if defined(STITCH_EMU_THREADS)

// All threads start together, as on the GPU, behind a gate that orders only the launch
// before them (an atomic, not a mutex: a mutex would also order one thread's whole run
// before the next one's start and hide races from ThreadSanitizer). For the same reason
// the shared arenas are poisoned here, before the threads start, and shared_arena() only
// returns the block's arena.
void run_domain(Domain& d) {
  for (unsigned int b = 0; b < d.block_count; ++b) {
    std::memset(d.blocks[b].arena, 0xff, kMaxStaticSharedBytes);
  }
  std::atomic<bool> gate{false};
  std::vector<std::thread> workers;
  workers.reserve(d.thread_count);
  for (unsigned int i = 0; i < d.thread_count; ++i) {
    workers.emplace_back([&d, &gate, i] {
      gate.wait(false, std::memory_order_acquire);
      EmuThread& t = d.threads[i];
      enter(&t);
      (*d.body)();
      finish_thread(t);
      enter(nullptr);
    });
  }
  gate.store(true, std::memory_order_release);
  gate.notify_all();
  for (std::thread& w : workers) w.join();
}

#else

constexpr size_t kFiberStackBytes = 64 * 1024;
constexpr size_t kMaxGuardedStacks = 8192;

// Fiber stacks of one OS thread, reused by every domain it runs; each stack sits above
// a PROT_NONE guard page so that an overflow faults instead of corrupting a neighbour.
class FiberStacks {
 public:
  ~FiberStacks() {
    if (base_ != nullptr) munmap(base_, capacity_ * slot_bytes());
  }
  void reserve(size_t count) {
    if (count <= capacity_) return;
    if (base_ != nullptr) munmap(base_, capacity_ * slot_bytes());
    void* memory = mmap(nullptr, count * slot_bytes(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) fail("cannot map " + std::to_string(count) + " fiber stacks");
    base_ = static_cast<unsigned char*>(memory);
    capacity_ = count;
    // Each guard page splits the mapping, and vm.max_map_count (65530) bounds a process's
    // mappings (two threads guarding 16384 each exhausted it: bad_alloc): above
    // kMaxGuardedStacks fibers (full cooperative grids) only the lowest stack is guarded.
    const size_t guarded = count <= kMaxGuardedStacks ? count : 1;
    for (size_t i = 0; i < guarded; ++i) mprotect(base_ + i * slot_bytes(), page(), PROT_NONE);
  }
  void* stack(size_t i) const { return base_ + i * slot_bytes() + page(); }

 private:
  static size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  static size_t slot_bytes() { return kFiberStackBytes + page(); }
  unsigned char* base_ = nullptr;
  size_t capacity_ = 0;
};

struct FiberWorker {
  FiberStacks stacks;
  ucontext_t scheduler;
  ucontext_t fresh;  // getcontext() once; copied into every new fiber (saves a syscall)
  bool fresh_ready = false;
};
thread_local FiberWorker t_worker;

void fiber_main() {
  EmuThread& t = *t_current;
  Domain& d = *t.domain;
  (*d.body)();
  finish_thread(t);
  EmuThread* next = next_runnable(d);
  if (next != nullptr) {
    enter(next);
    setcontext(&next->context);
  }
  setcontext(&t_worker.scheduler);  // no live thread left: the domain is done
}

// Runs the domain's fibers from `first` until every one has returned. Kept out of
// run_domain so that no local of it lives across swapcontext (-Wclobbered).
[[gnu::noinline]] void start_fibers(EmuThread* first) {
  enter(first);
  swapcontext(&t_worker.scheduler, &first->context);
  enter(nullptr);
}

// getcontext returns twice as far as the compiler knows: kept out of run_domain too.
[[gnu::noinline]] void capture_fresh_context(FiberWorker& w) {
  getcontext(&w.fresh);
  w.fresh_ready = true;
}

void run_domain(Domain& d) {
  FiberWorker& w = t_worker;
  if (!w.fresh_ready) capture_fresh_context(w);
  w.stacks.reserve(d.thread_count);
  d.run_queue.clear();
  d.run_head = 0;
  for (unsigned int i = 0; i < d.thread_count; ++i) {
    ucontext_t& c = d.threads[i].context;
    c = w.fresh;
    c.uc_stack.ss_sp = w.stacks.stack(i);
    c.uc_stack.ss_size = kFiberStackBytes;
    c.uc_link = nullptr;
    makecontext(&c, fiber_main, 0);
    if (i != 0) d.run_queue.push_back(&d.threads[i]);
  }
  start_fibers(&d.threads[0]);
}

#endif

// Per-OS-thread storage for the emulated threads and shared arenas of a domain.
struct DomainStorage {
  std::unique_ptr<EmuThread[]> threads;
  size_t thread_capacity = 0;
  std::unique_ptr<unsigned char[]> arenas;
  size_t arena_capacity = 0;
  void reserve(size_t thread_count, size_t block_count) {
    if (thread_count > thread_capacity) {
      threads = std::make_unique<EmuThread[]>(thread_count);
      thread_capacity = thread_count;
    }
    if (block_count > arena_capacity) {
      arenas = std::make_unique<unsigned char[]>(block_count * kMaxStaticSharedBytes);
      arena_capacity = block_count;
    }
  }
};

unsigned int env_unsigned(const char* name, unsigned int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const unsigned long parsed = std::strtoul(value, &end, 10);
  if (*end != '\0' || parsed == 0) {
    fail(std::string("environment variable ") + name + "=" + value + " must be a positive integer");
  }
  return static_cast<unsigned int>(parsed);
}

// --- hardware counters (STITCH_EMU_COUNTERS) --------------------------------------------
//
// While counting, every instrumented access of an emulated thread to a registered
// region or to its block's shared arena is appended to the OS thread's record list
// (counting runs every domain on the launching thread, so one list suffices); the end
// of each domain groups the records into warp-level requests and folds them into the
// totals. A request is the set of lanes of one warp that reach the same access site
// (the return address of the __tsan_* call) for the same time (the thread's own count
// of that site): the lock-step a warp keeps on the GPU whenever its lanes agree on the
// control flow, which generated code does except in tails of grid-stride loops (where
// the lanes that stop are simply absent from the later requests).
#if defined(STITCH_EMU_COUNTERS)

enum class AccessKind : uint8_t { kGlobalLoad, kGlobalStore, kSharedLoad, kSharedStore };

struct AccessRecord {
  uint32_t warp;  // warp index within the domain
  uint32_t occurrence;
  uintptr_t site;
  uintptr_t address;  // shared: offset in the block's arena
  uint32_t size;
  AccessKind kind;
};

struct CounterRegion {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::vector<uint64_t> loaded;  // a bit per byte
  std::vector<uint64_t> stored;
};

struct SiteKey {
  const EmuThread* thread;
  uintptr_t site;
  bool operator==(const SiteKey& other) const {
    return thread == other.thread && site == other.site;
  }
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& key) const {
    return std::hash<uintptr_t>()(reinterpret_cast<uintptr_t>(key.thread) * 0x9e3779b97f4a7c15ull ^
                                  key.site);
  }
};

struct CounterState {
  bool on = false;
  StitchEmuLimits limits{};
  StitchEmuCounters totals{};
  // The running launch's requests (count_request), folded into `totals` and
  // `site_requests` at its end, scaled when it was sampled (fold_launch_counters).
  StitchEmuCounters launch{};
  std::map<std::pair<uintptr_t, int>, uint64_t> launch_site_requests;
  unsigned long long sample_stride = 1;  // of the running launch: every block counted
  std::vector<CounterRegion> regions;    // sorted by begin, disjoint
  std::vector<AccessRecord> records;     // of the running domain
  std::unordered_map<SiteKey, uint32_t, SiteKeyHash> occurrences;
  std::unordered_map<uintptr_t, uint64_t> atomic_hits;
  size_t launch_dynamic_shared_bytes = 0;
  // The running launch's critical path (StitchEmuCounters::global_load_chain): the
  // busiest warp's load requests summed over the grid barriers' phases (cooperative),
  // or the most of any block's warp (blocks run side by side), times its waves.
  unsigned long long launch_chain_sum = 0;
  unsigned long long launch_chain_max = 0;
  unsigned long long launch_waves = 1;
  std::vector<unsigned long long> warp_loads;  // of the running domain, by warp
  // Warp-level requests per (site, kind) of the window, and the list end() leaves.
  std::map<std::pair<uintptr_t, int>, uint64_t> site_requests;
  std::vector<StitchEmuSite> sites;
};
CounterState g_counters;
thread_local int t_in_atomic = 0;

bool counting() { return g_counters.on; }

void set_bits(std::vector<uint64_t>& bits, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) bits[i / 64] |= uint64_t{1} << (i % 64);
}

}  // namespace

// Declared in stitch_emu.h; stitch_emu_tsan.cc's entry points call it.
void record_access(uintptr_t address, uint32_t size, bool store, uintptr_t site) {
  if (!g_counters.on || t_in_atomic != 0) return;
  EmuThread* t = t_current;
  if (t == nullptr || size == 0) return;
  const uintptr_t arena = reinterpret_cast<uintptr_t>(t->block->arena);
  AccessRecord record{t->domain_warp, 0, site, 0, size, AccessKind::kGlobalLoad};
  if (address >= arena && address < arena + kMaxStaticSharedBytes) {
    if (!t->block->counted) return;
    record.kind = store ? AccessKind::kSharedStore : AccessKind::kSharedLoad;
    record.address = address - arena;
  } else {
    std::vector<CounterRegion>& regions = g_counters.regions;
    auto it =
        std::upper_bound(regions.begin(), regions.end(), address,
                         [](uintptr_t a, const CounterRegion& region) { return a < region.begin; });
    if (it == regions.begin()) return;
    CounterRegion& region = *(it - 1);
    if (address >= region.end) return;
    const size_t offset = address - region.begin;
    const size_t count = std::min<size_t>(size, region.end - address);
    set_bits(store ? region.stored : region.loaded, offset, count);
    if (!t->block->counted) return;  // sampled out: its bytes count as unique, no requests
    record.kind = store ? AccessKind::kGlobalStore : AccessKind::kGlobalLoad;
    record.address = address;
  }
  record.occurrence = g_counters.occurrences[SiteKey{t, site}]++;
  g_counters.records.push_back(record);
}

namespace {

size_t count_distinct(std::vector<uint64_t>& values) {
  std::sort(values.begin(), values.end());
  return static_cast<size_t>(std::unique(values.begin(), values.end()) - values.begin());
}

// Folds the records of one request [first, last) into the totals.
void count_request(const AccessRecord* first, const AccessRecord* last) {
  StitchEmuCounters& c = g_counters.launch;
  const AccessKind kind = first->kind;
  if (kind == AccessKind::kGlobalLoad) {
    std::vector<unsigned long long>& loads = g_counters.warp_loads;
    if (loads.size() <= first->warp) loads.resize(first->warp + 1, 0);
    ++loads[first->warp];
  }
  ++g_counters.launch_site_requests[{first->site, static_cast<int>(kind)}];
  uint64_t bytes = 0;
  static std::vector<uint64_t> units;  // counting is single-threaded
  units.clear();
  if (kind == AccessKind::kGlobalLoad || kind == AccessKind::kGlobalStore) {
    uint64_t wide_bytes = 0;  // of 128-bit lane accesses
    for (const AccessRecord* r = first; r != last; ++r) {
      bytes += r->size;
      if (r->size >= 16) wide_bytes += r->size;
      for (uint64_t s = r->address >> 5; s <= (r->address + r->size - 1) >> 5; ++s) {
        units.push_back(s);
      }
    }
    const uint64_t sectors = count_distinct(units);
    units.clear();
    for (const AccessRecord* r = first; r != last; ++r) {
      for (uint64_t l = r->address >> 7; l <= (r->address + r->size - 1) >> 7; ++l) {
        units.push_back(l);
      }
    }
    const uint64_t lines = count_distinct(units);
    units.clear();
    for (const AccessRecord* r = first; r != last; ++r) {
      for (uint64_t b = r->address; b < r->address + r->size; ++b) units.push_back(b);
    }
    const uint64_t distinct_bytes = count_distinct(units);
    if (kind == AccessKind::kGlobalLoad) {
      ++c.global_load_requests;
      c.global_load_bytes += bytes;
      c.global_load_distinct_bytes += distinct_bytes;
      c.global_load_sectors += sectors;
      c.global_load_lines += lines;
      c.global_wide_load_bytes += wide_bytes;
    } else {
      ++c.global_store_requests;
      c.global_store_bytes += bytes;
      c.global_store_distinct_bytes += distinct_bytes;
      c.global_store_sectors += sectors;
      c.global_store_lines += lines;
      c.global_wide_store_bytes += wide_bytes;
    }
    return;
  }
  // Shared memory: the distinct 4-byte words, then the most of them in one bank.
  for (const AccessRecord* r = first; r != last; ++r) {
    bytes += r->size;
    for (uint64_t w = r->address >> 2; w <= (r->address + r->size - 1) >> 2; ++w) {
      units.push_back(w);
    }
  }
  const size_t words = count_distinct(units);
  unsigned int per_bank[32] = {};
  unsigned int wavefronts = 0;
  for (size_t i = 0; i < words; ++i) wavefronts = std::max(wavefronts, ++per_bank[units[i] % 32]);
  units.clear();
  for (const AccessRecord* r = first; r != last; ++r) {
    for (uint64_t b = r->address; b < r->address + r->size; ++b) units.push_back(b);
  }
  const uint64_t distinct_bytes = count_distinct(units);
  if (kind == AccessKind::kSharedLoad) {
    ++c.shared_load_requests;
  } else {
    ++c.shared_store_requests;
  }
  c.shared_bytes += bytes;
  c.shared_wavefronts += wavefronts;
  c.shared_ideal_wavefronts += (distinct_bytes + 127) / 128;
  c.shared_max_wavefronts = std::max<unsigned long long>(c.shared_max_wavefronts, wavefronts);
}

// The end of a domain, or of a phase of it (a grid barrier): its records become
// requests; returns the most global load requests of one of its warps.
unsigned long long flush_domain_counters() {
  std::vector<AccessRecord>& records = g_counters.records;
  std::sort(records.begin(), records.end(), [](const AccessRecord& a, const AccessRecord& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.warp != b.warp) return a.warp < b.warp;
    if (a.site != b.site) return a.site < b.site;
    return a.occurrence < b.occurrence;
  });
  size_t start = 0;
  for (size_t i = 1; i <= records.size(); ++i) {
    if (i < records.size() && records[i].kind == records[start].kind &&
        records[i].warp == records[start].warp && records[i].site == records[start].site &&
        records[i].occurrence == records[start].occurrence) {
      continue;
    }
    count_request(records.data() + start, records.data() + i);
    start = i;
  }
  records.clear();
  g_counters.occurrences.clear();
  unsigned long long busiest = 0;
  for (unsigned long long loads : g_counters.warp_loads) busiest = std::max(busiest, loads);
  g_counters.warp_loads.clear();
  return busiest;
}

// The critical path (StitchEmuCounters::global_load_chain): a cooperative launch's
// phases follow one another; the blocks of an ordinary launch run side by side, its
// waves one after another.
void end_phase(unsigned long long busiest) { g_counters.launch_chain_sum += busiest; }
void end_block(unsigned long long busiest) {
  g_counters.launch_chain_max = std::max(g_counters.launch_chain_max, busiest);
}
void set_launch_waves(unsigned long long waves) { g_counters.launch_waves = waves; }

// Whether block `linear_block` of the running launch has its requests counted: runs of
// kSampleRun consecutive blocks, every sample_stride-th run. A run of 32 rows covers
// every alignment a row of 4-byte elements can have to a 128-byte line, so a sample
// of runs sees the sectors and lines an evenly strided sample would alias with.
constexpr unsigned long long kSampleRun = 32;
bool block_counted(unsigned long long linear_block) {
  return g_counters.sample_stride <= 1 ||
         (linear_block / kSampleRun) % g_counters.sample_stride == 0;
}

// The end of a launch of `blocks` blocks: its requests into the totals, scaled by
// blocks / counted blocks when it was sampled (rounded to the nearest count).
void fold_launch_counters(unsigned long long blocks) {
  unsigned long long counted = 0;
  for (unsigned long long b = 0; b < blocks; b += kSampleRun) {
    if (block_counted(b)) counted += std::min(kSampleRun, blocks - b);
  }
  const double scale = static_cast<double>(blocks) / static_cast<double>(counted);
  auto scaled = [scale](unsigned long long value) {
    return static_cast<unsigned long long>(std::llround(static_cast<double>(value) * scale));
  };
  StitchEmuCounters& c = g_counters.totals;
  const StitchEmuCounters& l = g_counters.launch;
  c.counted_blocks += counted;
  c.global_load_requests += scaled(l.global_load_requests);
  c.global_load_bytes += scaled(l.global_load_bytes);
  c.global_load_distinct_bytes += scaled(l.global_load_distinct_bytes);
  c.global_load_sectors += scaled(l.global_load_sectors);
  c.global_load_lines += scaled(l.global_load_lines);
  c.global_store_requests += scaled(l.global_store_requests);
  c.global_store_bytes += scaled(l.global_store_bytes);
  c.global_store_distinct_bytes += scaled(l.global_store_distinct_bytes);
  c.global_store_sectors += scaled(l.global_store_sectors);
  c.global_store_lines += scaled(l.global_store_lines);
  c.global_wide_load_bytes += scaled(l.global_wide_load_bytes);
  c.global_wide_store_bytes += scaled(l.global_wide_store_bytes);
  c.shared_load_requests += scaled(l.shared_load_requests);
  c.shared_store_requests += scaled(l.shared_store_requests);
  c.shared_bytes += scaled(l.shared_bytes);
  c.shared_wavefronts += scaled(l.shared_wavefronts);
  c.shared_ideal_wavefronts += scaled(l.shared_ideal_wavefronts);
  c.shared_max_wavefronts = std::max(c.shared_max_wavefronts, l.shared_max_wavefronts);
  c.global_load_chain +=
      g_counters.launch_chain_sum + g_counters.launch_chain_max * g_counters.launch_waves;
  g_counters.launch_chain_sum = 0;
  g_counters.launch_chain_max = 0;
  g_counters.launch_waves = 1;
  for (const auto& [key, requests] : g_counters.launch_site_requests) {
    g_counters.site_requests[key] += scaled(requests);
  }
  g_counters.launch = StitchEmuCounters{};
  g_counters.launch_site_requests.clear();
  g_counters.sample_stride = 1;
}

void count_launch(bool cooperative, unsigned long long blocks, unsigned int block_threads,
                  size_t dynamic_shared_bytes) {
  StitchEmuCounters& c = g_counters.totals;
  // Runs of kSampleRun blocks, every stride-th: about sample_blocks blocks counted.
  const unsigned long long sample = g_counters.limits.sample_blocks;
  const unsigned long long runs = (blocks + kSampleRun - 1) / kSampleRun;
  const unsigned long long wanted_runs = std::max(1ULL, sample / kSampleRun);
  g_counters.sample_stride =
      sample != 0 && blocks > sample ? (runs + wanted_runs - 1) / wanted_runs : 1;
  ++c.launches;
  if (cooperative) ++c.cooperative_launches;
  c.blocks += blocks;
  c.warps += blocks * ((block_threads + 31) / 32);
  c.threads += blocks * block_threads;
  c.max_block_threads = std::max<unsigned long long>(c.max_block_threads, block_threads);
  c.max_shared_bytes_per_block =
      std::max<unsigned long long>(c.max_shared_bytes_per_block, dynamic_shared_bytes);
  g_counters.launch_dynamic_shared_bytes = dynamic_shared_bytes;
}

#else
bool counting() { return false; }
bool block_counted(unsigned long long) { return true; }
unsigned long long flush_domain_counters() { return 0; }
void end_phase(unsigned long long) {}
void end_block(unsigned long long) {}
void set_launch_waves(unsigned long long) {}
void fold_launch_counters(unsigned long long) {}
void count_launch(bool, unsigned long long, unsigned int, size_t) {}
#endif

cudaError_t set_error(cudaError_t error) {
  if (error != cudaSuccess) t_last_error = error;
  return error;
}

}  // namespace

void syncthreads(const char* file, int line) {
  EmuThread& t = current("__syncthreads");
  Block& b = *t.block;
  BarrierLock lock = lock_block_barrier(b);
  if (!arrive(t, lock, Wait::kBlockBarrier, file, line, b.at_barrier, b.thread_count)) return;
  for (unsigned int i = 0; i < b.thread_count; ++i) {
    const EmuThread& other = b.threads[i];
    const char* other_file = other.file;
    const int other_line = other.line;
    if (other_line != line || std::strcmp(other_file, file) != 0) {
      fail(where(t) + ": divergent __syncthreads: thread " + coords(other.thread_idx) +
           " waits at " + other_file + ":" + std::to_string(other_line) + ", thread " +
           coords(t.thread_idx) + " at " + file + ":" + std::to_string(line));
    }
  }
#if defined(STITCH_EMU_COUNTERS)
  if (counting()) ++g_counters.totals.block_barriers;
#endif
  for (unsigned int i = 0; i < b.thread_count; ++i) release(b.threads[i], t);
}

void grid_sync(unsigned int* counter, const char* file, int line) {
  EmuThread& t = current("stitch_grid_sync");
  Domain& d = *t.domain;
  if (!d.cooperative) {
    fail(where(t) + ": stitch_grid_sync at " + file + ":" + std::to_string(line) +
         " in a non-cooperative launch; launch the kernel with STITCH_LAUNCH_COOPERATIVE");
  }
  if (counter == nullptr) {
    fail(where(t) + ": stitch_grid_sync at " + file + ":" + std::to_string(line) +
         " got a null counter; it must point into the zeroed workspace");
  }
  BarrierLock lock = lock_grid_barrier(d);
  if (!arrive(t, lock, Wait::kGrid, file, line, d.at_grid_barrier, d.thread_count)) return;
#if defined(STITCH_EMU_COUNTERS)
  if (counting()) {
    ++g_counters.totals.grid_barriers;
    // Every thread waits here: the phase's requests are complete.
    end_phase(flush_domain_counters());
  }
#endif
  for (unsigned int i = 0; i < d.thread_count; ++i) release(d.threads[i], t);
}

uint64_t warp_collective(WarpOp op, unsigned int mask, uint64_t value, int lane_arg, int width) {
  EmuThread& t = current(op_name(op));
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fail(where(t) + ": " + op_name(op) + " with width " + std::to_string(width) +
         "; width must be a power of two in [1, 32]");
  }
  if (!((mask >> t.lane) & 1u)) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "0x%08x", mask);
    fail(where(t) + ": thread " + coords(t.thread_idx) + " calls " + op_name(op) + " with mask " +
         buffer + " that does not name its own lane " + std::to_string(t.lane));
  }
  Block& b = *t.block;
  const unsigned int warp = t.linear / 32;
  BarrierLock lock = lock_warp(b, warp);
  EmuThread* warp_threads = b.threads + warp * 32;
  const unsigned int required = mask & existing_lanes(warp, b.thread_count);
  t.op = op;
  t.mask = mask;
  t.in = value;
  t.lane_arg = lane_arg;
  t.width = width;
  t.wait = Wait::kWarp;
  t.at_warp = true;
  bool complete = true;
  for (unsigned int l = 0; l < 32; ++l) {
    if (!((required >> l) & 1u) || l == t.lane) continue;
    const EmuThread& other = warp_threads[l];
    // A lane not waiting yet, or waiting at an earlier collective of other lanes (its
    // mask leaves this lane out), arrives here later.
    const unsigned int other_mask = other.mask;
    const WarpOp other_op = other.op;
    if (!other.at_warp || !((other_mask >> t.lane) & 1u)) {
      complete = false;
      continue;
    }
    if (other_mask != mask || other_op != op) {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "0x%08x vs 0x%08x", other_mask, mask);
      fail(where(t) + ": divergent warp collectives in warp " + std::to_string(warp) + ": lane " +
           std::to_string(l) + " waits at " + op_name(other_op) + ", lane " +
           std::to_string(t.lane) + " calls " + op_name(op) + " (masks " + buffer + ")");
    }
  }
  if (!complete) {
    park(t, lock);
    return t.out;
  }
#if defined(STITCH_EMU_COUNTERS)
  if (counting()) {
    const bool shuffle = op == WarpOp::kShflIdx || op == WarpOp::kShflUp ||
                         op == WarpOp::kShflDown || op == WarpOp::kShflXor;
    ++(shuffle ? g_counters.totals.warp_shuffles : g_counters.totals.warp_votes);
  }
#endif
  complete_warp_collective(warp_threads, required, t);
  return t.out;
}

unsigned char* shared_arena(size_t bytes) {
  EmuThread& t = current("STITCH_SHARED_ARENA");
  if (bytes > kMaxStaticSharedBytes) {
    fail(where(t) + ": shared arena of " + std::to_string(bytes) +
         " bytes exceeds CUDA's 48 KiB static __shared__ limit");
  }
  Block& b = *t.block;
#if defined(STITCH_EMU_THREADS)
  return b.arena;  // poisoned before the threads started (see run_domain)
#else
  if (b.arena_bytes == 0) {
    std::memset(b.arena, 0xff, bytes);
    b.arena_bytes = bytes == 0 ? 1 : bytes;
  } else if (b.arena_bytes != std::max<size_t>(bytes, 1)) {
    fail(where(t) + ": threads of one block request shared arenas of different sizes");
  }
#if defined(STITCH_EMU_COUNTERS)
  if (counting()) {
    unsigned long long& most = g_counters.totals.max_shared_bytes_per_block;
    most = std::max<unsigned long long>(most, bytes + g_counters.launch_dynamic_shared_bytes);
  }
#endif
  return b.arena;
#endif
}

int max_coresident_blocks(int block_threads) {
#if defined(STITCH_EMU_COUNTERS)
  // While counting: the device's occupancy limit, so that a cooperative kernel gets the
  // grid it would get on that GPU (threads, blocks and registers per SM; the static
  // shared arena is left out as the occupancy API's caller passes 0 for it).
  if (counting() && g_counters.limits.sm_count != 0 && block_threads > 0) {
    const StitchEmuLimits& l = g_counters.limits;
    const unsigned int threads = (static_cast<unsigned int>(block_threads) + 31) / 32 * 32;
    const unsigned int registers = l.registers_per_thread != 0 ? l.registers_per_thread : 32;
    unsigned int per_sm = std::min(l.max_blocks_per_sm, l.max_threads_per_sm / threads);
    per_sm = std::min(per_sm, l.registers_per_sm / (registers * threads));
    return static_cast<int>(per_sm * l.sm_count);
  }
#endif
  (void)block_threads;
  return static_cast<int>(env_unsigned("STITCH_EMU_MAX_BLOCKS", 4));
}

cudaError_t launch_kernel(const char* name, bool cooperative, dim3 grid, dim3 block,
                          size_t dynamic_shared_bytes, const std::function<void()>& body) {
  if (t_current != nullptr) {
    fail(std::string("kernel ") + name + " launched from inside kernel " +
         t_current->domain->kernel + "; dynamic parallelism is not emulated");
  }
  const unsigned long long block_threads =
      static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      block.x > 1024 || block.y > 1024 || block.z > 64 || block_threads > kMaxBlockThreads ||
      grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 ||
      dynamic_shared_bytes > kMaxStaticSharedBytes) {
    return set_error(cudaErrorInvalidConfiguration);
  }
  const unsigned long long block_count = static_cast<unsigned long long>(grid.x) * grid.y * grid.z;
  const unsigned int threads = static_cast<unsigned int>(block_threads);
  if (cooperative) {
    if (block_count > static_cast<unsigned long long>(max_coresident_blocks(threads))) {
      return set_error(cudaErrorCooperativeLaunchTooLarge);
    }
    if (counting()) count_launch(true, block_count, threads, dynamic_shared_bytes);
    const unsigned int count = static_cast<unsigned int>(block_count);
    DomainStorage storage;
    storage.reserve(static_cast<size_t>(count) * threads, count);
    Domain d;
    init_domain(d, name, true, body, grid, block, 0, count, storage.threads.get(),
                storage.arenas.get());
    run_domain(d);
    if (counting()) {
      end_phase(flush_domain_counters());
      fold_launch_counters(block_count);
    }
    return cudaSuccess;
  }
  std::atomic<unsigned long long> next_block{0};
  auto run_blocks = [&] {
    thread_local DomainStorage storage;
    storage.reserve(threads, 1);
    Domain d;
    for (;;) {
      const unsigned long long b = next_block.fetch_add(1);
      if (b >= block_count) break;
      init_domain(d, name, false, body, grid, block, b, 1, storage.threads.get(),
                  storage.arenas.get());
      run_domain(d);
      if (counting()) end_block(flush_domain_counters());
    }
  };
  if (counting()) count_launch(false, block_count, threads, dynamic_shared_bytes);
#if defined(STITCH_EMU_THREADS)
  run_blocks();
#else
  const unsigned int hardware = std::max(1u, std::thread::hardware_concurrency());
  // Counting keeps one record list: every block runs on this thread.
  const unsigned long long workers =
      counting()
          ? 1
          : std::min<unsigned long long>(env_unsigned("STITCH_EMU_WORKERS", hardware), block_count);
  std::vector<std::thread> helpers;
  for (unsigned long long i = 1; i < workers; ++i) helpers.emplace_back(run_blocks);
  run_blocks();
  for (std::thread& h : helpers) h.join();
#endif
  if (counting()) {
    const unsigned long long resident = static_cast<unsigned long long>(
        std::max(1, max_coresident_blocks(static_cast<int>(threads))));
    set_launch_waves((block_count + resident - 1) / resident);
    fold_launch_counters(block_count);
  }
  return cudaSuccess;
}

#if defined(STITCH_EMU_COUNTERS)
void atomic_begin(const void* address) {
  if (t_in_atomic++ != 0 || !g_counters.on || t_current == nullptr) return;
  ++g_counters.totals.atomics;
  ++g_counters.atomic_hits[reinterpret_cast<uintptr_t>(address)];
}
void atomic_end() { --t_in_atomic; }
#endif

}  // namespace stitch_emu

void stitch_emu_misaligned(const void* address) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", address);
  const std::string place =
      stitch_emu::t_current != nullptr ? stitch_emu::where(*stitch_emu::t_current) + ": " : "";
  stitch_emu::fail(place + "16-byte access at " + text +
                   ", which is not 16-byte aligned (a misaligned-address fault on the GPU)");
}

#if defined(STITCH_EMU_COUNTERS)
extern "C" {

int stitch_emu_counters_begin(const StitchEmuRegion* regions, int region_count,
                              const StitchEmuLimits* limits) {
  using namespace stitch_emu;
  if (g_counters.on || region_count < 0 || (region_count > 0 && regions == nullptr)) return -1;
  g_counters.totals = StitchEmuCounters{};
  g_counters.limits = limits != nullptr ? *limits : StitchEmuLimits{};
  g_counters.regions.clear();
  for (int i = 0; i < region_count; ++i) {
    if (regions[i].base == nullptr || regions[i].bytes == 0) continue;
    CounterRegion region;
    region.begin = reinterpret_cast<uintptr_t>(regions[i].base);
    region.end = region.begin + regions[i].bytes;
    region.loaded.assign((regions[i].bytes + 63) / 64, 0);
    region.stored.assign((regions[i].bytes + 63) / 64, 0);
    g_counters.regions.push_back(std::move(region));
  }
  std::sort(g_counters.regions.begin(), g_counters.regions.end(),
            [](const CounterRegion& a, const CounterRegion& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < g_counters.regions.size(); ++i) {
    if (g_counters.regions[i].begin < g_counters.regions[i - 1].end) {
      // Overlapping regions (a view of another buffer): merge them.
      CounterRegion& previous = g_counters.regions[i - 1];
      const uintptr_t end = std::max(previous.end, g_counters.regions[i].end);
      previous.loaded.assign((end - previous.begin + 63) / 64, 0);
      previous.stored.assign((end - previous.begin + 63) / 64, 0);
      previous.end = end;
      g_counters.regions.erase(g_counters.regions.begin() + static_cast<long>(i));
      --i;
    }
  }
  g_counters.records.clear();
  g_counters.occurrences.clear();
  g_counters.atomic_hits.clear();
  g_counters.site_requests.clear();
  g_counters.launch = StitchEmuCounters{};
  g_counters.launch_site_requests.clear();
  g_counters.sample_stride = 1;
  g_counters.sites.clear();
  g_counters.on = true;
  return 0;
}

int stitch_emu_counters_sites(StitchEmuSite* sites, int capacity) {
  using namespace stitch_emu;
  const int count = static_cast<int>(g_counters.sites.size());
  for (int i = 0; i < count && i < capacity && sites != nullptr; ++i) {
    sites[i] = g_counters.sites[static_cast<size_t>(i)];
  }
  return count;
}

int stitch_emu_counters_end(StitchEmuCounters* counters) {
  using namespace stitch_emu;
  if (!g_counters.on) return -1;
  g_counters.on = false;
  StitchEmuCounters& c = g_counters.totals;
  // Unique bytes and sectors from the per-byte bitmaps (sectors are 32-byte aligned in
  // the address space, as the regions' bases are 256-byte aligned device allocations).
  for (const CounterRegion& region : g_counters.regions) {
    for (int store = 0; store < 2; ++store) {
      const std::vector<uint64_t>& bits = store != 0 ? region.stored : region.loaded;
      unsigned long long bytes = 0;
      unsigned long long sectors = 0;
      for (size_t w = 0; w < bits.size(); ++w) {
        bytes += static_cast<unsigned long long>(__builtin_popcountll(bits[w]));
      }
      const uintptr_t first_sector = region.begin >> 5;
      const uintptr_t last_sector = (region.end - 1) >> 5;
      for (uintptr_t sector = first_sector; sector <= last_sector; ++sector) {
        const uintptr_t lo = std::max(sector << 5, region.begin) - region.begin;
        const uintptr_t hi = std::min((sector + 1) << 5, region.end) - region.begin;
        for (uintptr_t b = lo; b < hi; ++b) {
          if ((bits[b / 64] >> (b % 64)) & 1u) {
            ++sectors;
            break;
          }
        }
      }
      (store != 0 ? c.global_unique_store_bytes : c.global_unique_load_bytes) += bytes;
      (store != 0 ? c.global_unique_store_sectors : c.global_unique_load_sectors) += sectors;
    }
  }
  c.atomic_addresses = g_counters.atomic_hits.size();
  for (const auto& [address, hits] : g_counters.atomic_hits) {
    c.atomic_max_per_address = std::max<unsigned long long>(c.atomic_max_per_address, hits);
  }
  if (counters != nullptr) *counters = c;
  g_counters.regions.clear();
  for (const auto& [key, requests] : g_counters.site_requests) {
    Dl_info info{};
    uintptr_t base = 0;
    if (dladdr(reinterpret_cast<void*>(key.first), &info) != 0) {
      base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    g_counters.sites.push_back({key.first - base, static_cast<unsigned int>(key.second), requests});
  }
  std::sort(g_counters.sites.begin(), g_counters.sites.end(),
            [](const StitchEmuSite& a, const StitchEmuSite& b) {
              return a.offset != b.offset ? a.offset < b.offset : a.kind < b.kind;
            });
  return 0;
}

}  // extern "C"
#endif  // STITCH_EMU_COUNTERS

cudaError_t cudaGetLastError() {
  const cudaError_t error = stitch_emu::t_last_error;
  stitch_emu::t_last_error = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() { return stitch_emu::t_last_error; }

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorCooperativeLaunchTooLarge:
      return "too many blocks in cooperative launch";
  }
  return "unrecognized error code";
}
