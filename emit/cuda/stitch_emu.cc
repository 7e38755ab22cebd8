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
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stitch_emu_counting.h"

#if defined(STITCH_EMU_COUNTERS) && defined(STITCH_EMU_THREADS)
#error "the hardware counters need the fiber emulation (one OS thread per domain)"
#endif

#if defined(STITCH_EMU_THREADS)
#include <condition_variable>
#include <mutex>
#else
#include "stitch_emu_fiber.h"
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

struct EmuThread : ThreadCoordinates, CountingThread {
  Domain* domain = nullptr;
  Block* block = nullptr;
  unsigned int linear = 0;  // thread index within its block
  unsigned int lane = 0;
  // What the thread waits for. Set by the thread on arrival and cleared (kNone) by the
  // arrival that releases it, both under the lock of that barrier.
  Relaxed<Wait> wait = Wait::kNone;
  Relaxed<const char*> file = nullptr;  // the barrier it waits at
  Relaxed<int> line = 0;
  Relaxed<WarpOp> op = WarpOp::kSync;
  Relaxed<unsigned int> mask = 0u;
  // The warp collective it takes part in, under its warp's lock.
  uint64_t in = 0;
  int lane_arg = 0;
  int width = 0;
  uint64_t out = 0;
#if defined(STITCH_EMU_THREADS)
  std::condition_variable wake;
#else
  fiber::Context context;
#endif
};

constexpr unsigned int kMaxBlockWarps = kMaxBlockThreads / 32;

struct Block {
  EmuThread* threads = nullptr;  // block_threads entries, by linear index
  unsigned int thread_count = 0;
  unsigned int at_barrier = 0;  // under barrier_mutex
  unsigned char* arena = nullptr;
  size_t arena_bytes = 0;  // requested by the kernel; 0 until the first request
  // Per warp, the lanes waiting at a warp collective; under that warp's lock.
  uint32_t warp_waiting[kMaxBlockWarps] = {};
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
  t_counting = t;
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
  fiber::switch_to(t.context, next->context);  // resumed by whoever called enter(&t)
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

void complete_warp_collective(EmuThread* warp_threads, uint32_t& waiting, unsigned int required,
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
  waiting &= ~required;
  for (unsigned int l = 0; l < 32; ++l) {
    if ((required >> l) & 1u) release(warp_threads[l], self);
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
    std::fill(std::begin(blk.warp_waiting), std::end(blk.warp_waiting), 0u);
    const bool counted = counters::block_counted(linear_block);
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
      t.arena = blk.arena;
      t.block_counted = counted;
      t.accesses = 0;
      t.wait = Wait::kNone;
      t.in = 0;
      t.out = 0;
    }
  }
}

#if defined(STITCH_EMU_THREADS)

// The OS threads that run emulated threads, kept by the launching thread across domains
// and launches: under ThreadSanitizer an OS thread costs about 2.5 ms to start, and a
// thread per CUDA thread per block made a 64-block launch of 256 threads take 43 s.
// Worker i runs thread i of each domain (or nothing, beyond its thread count).
//
// All threads of a domain start together, as on the GPU, behind a gate that orders only
// the launch before them: an atomic epoch the launcher releases and each worker acquires
// (not a mutex, which would also order one thread's whole run before the next one's
// start and hide races from ThreadSanitizer). Each worker then releases its end on a
// counter the launcher acquires, as a join would. For the same reason the shared arenas
// are poisoned before the threads start, and shared_arena() only returns the block's
// arena.
class WorkerPool {
 public:
  ~WorkerPool() {
    stopping_ = true;
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  void run(Domain& d) {
    while (workers_.size() < d.thread_count) {
      const unsigned int index = static_cast<unsigned int>(workers_.size());
      const uint64_t seen = epoch_.load(std::memory_order_relaxed);
      workers_.emplace_back([this, index, seen] { work(index, seen); });
    }
    domain_ = &d;
    finished_.store(0, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    const unsigned int everyone = static_cast<unsigned int>(workers_.size());
    for (unsigned int done = finished_.load(std::memory_order_acquire); done != everyone;
         done = finished_.load(std::memory_order_acquire)) {
      finished_.wait(done, std::memory_order_acquire);
    }
  }

 private:
  void work(unsigned int index, uint64_t seen) {
    for (;;) {
      epoch_.wait(seen, std::memory_order_acquire);
      seen = epoch_.load(std::memory_order_acquire);
      if (stopping_) return;
      Domain& d = *domain_;
      if (index < d.thread_count) {
        EmuThread& t = d.threads[index];
        enter(&t);
        (*d.body)();
        finish_thread(t);
        enter(nullptr);
      }
      finished_.fetch_add(1, std::memory_order_release);
      finished_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<unsigned int> finished_{0};
  Domain* domain_ = nullptr;  // written before the epoch's release
  bool stopping_ = false;     // likewise
};

void run_domain(Domain& d) {
  for (unsigned int b = 0; b < d.block_count; ++b) {
    std::memset(d.blocks[b].arena, 0xff, kMaxStaticSharedBytes);
  }
  thread_local WorkerPool pool;
  pool.run(d);
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
  fiber::Context scheduler;
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
    fiber::jump_to(next->context);
  }
  fiber::jump_to(t_worker.scheduler);  // no live thread left: the domain is done
}

// Runs the domain's fibers from `first` until every one has returned. Kept out of
// run_domain so that no local of it lives across the switch (-Wclobbered).
[[gnu::noinline]] void start_fibers(EmuThread* first) {
  enter(first);
  fiber::switch_to(t_worker.scheduler, first->context);
  enter(nullptr);
}

void run_domain(Domain& d) {
  FiberWorker& w = t_worker;
  w.stacks.reserve(d.thread_count);
  d.run_queue.clear();
  d.run_head = 0;
  for (unsigned int i = 0; i < d.thread_count; ++i) {
    fiber::prepare(d.threads[i].context, w.stacks.stack(i), kFiberStackBytes, fiber_main);
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
  counters::count_block_barrier();
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
  if (counters::on()) {
    counters::count_grid_barrier();
    // Every thread waits here: the phase's requests are complete.
    counters::end_phase(counters::flush_domain());
  }
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
  uint32_t& waiting = b.warp_waiting[warp];
  const uint32_t others = required & ~(1u << t.lane);
  // A lane not waiting yet arrives here later. Each waiting lane whose mask names this
  // one must be at the same collective with the same mask; one that leaves it out waits
  // at an earlier collective of other lanes. While lanes are missing, one such partner
  // is checked (a divergence then surfaces at the next arrival, or at the last one,
  // which checks every lane, or in the deadlock report): O(1) per arrival instead of a
  // scan of the warp.
  bool complete = (waiting & others) == others;
  for (uint32_t lanes = waiting & others; lanes != 0; lanes &= lanes - 1) {
    const unsigned int l = static_cast<unsigned int>(__builtin_ctz(lanes));
    const EmuThread& other = warp_threads[l];
    const unsigned int other_mask = other.mask;
    const WarpOp other_op = other.op;
    if (!((other_mask >> t.lane) & 1u)) {
      complete = false;
      continue;
    }
    if (other_mask == mask && other_op == op) {
      if (!complete) break;
    } else {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "0x%08x vs 0x%08x", other_mask, mask);
      fail(where(t) + ": divergent warp collectives in warp " + std::to_string(warp) + ": lane " +
           std::to_string(l) + " waits at " + op_name(other_op) + ", lane " +
           std::to_string(t.lane) + " calls " + op_name(op) + " (masks " + buffer + ")");
    }
  }
  waiting |= 1u << t.lane;
  if (!complete) {
    park(t, lock);
    return t.out;
  }
  if (counters::on()) {
    counters::count_warp_collective(op == WarpOp::kShflIdx || op == WarpOp::kShflUp ||
                                    op == WarpOp::kShflDown || op == WarpOp::kShflXor);
  }
  complete_warp_collective(warp_threads, waiting, required, t);
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
  counters::count_shared_arena(bytes);
  return b.arena;
#endif
}

int max_coresident_blocks(int block_threads) {
  // While counting: the device's occupancy limit, so that a cooperative kernel gets the
  // grid it would get on that GPU.
  if (const int blocks = counters::coresident_blocks(block_threads); blocks > 0) return blocks;
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
    if (counters::on()) counters::count_launch(true, block_count, threads, dynamic_shared_bytes);
    const unsigned int count = static_cast<unsigned int>(block_count);
    DomainStorage storage;
    storage.reserve(static_cast<size_t>(count) * threads, count);
    Domain d;
    init_domain(d, name, true, body, grid, block, 0, count, storage.threads.get(),
                storage.arenas.get());
    run_domain(d);
    if (counters::on()) {
      counters::end_phase(counters::flush_domain());
      counters::fold_launch(block_count);
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
      if (counters::on()) counters::end_block(counters::flush_domain());
    }
  };
  if (counters::on()) counters::count_launch(false, block_count, threads, dynamic_shared_bytes);
#if defined(STITCH_EMU_THREADS)
  run_blocks();
#else
  const unsigned int hardware = std::max(1u, std::thread::hardware_concurrency());
  // Counting keeps one record list: every block runs on this thread.
  const unsigned long long workers =
      counters::on()
          ? 1
          : std::min<unsigned long long>(env_unsigned("STITCH_EMU_WORKERS", hardware), block_count);
  std::vector<std::thread> helpers;
  for (unsigned long long i = 1; i < workers; ++i) helpers.emplace_back(run_blocks);
  run_blocks();
  for (std::thread& h : helpers) h.join();
#endif
  if (counters::on()) {
    const unsigned long long resident = static_cast<unsigned long long>(
        std::max(1, max_coresident_blocks(static_cast<int>(threads))));
    counters::set_launch_waves((block_count + resident - 1) / resident);
    counters::fold_launch(block_count);
  }
  return cudaSuccess;
}

}  // namespace stitch_emu

void stitch_emu_misaligned(const void* address) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", address);
  const std::string place =
      stitch_emu::t_current != nullptr ? stitch_emu::where(*stitch_emu::t_current) + ": " : "";
  stitch_emu::fail(place + "16-byte access at " + text +
                   ", which is not 16-byte aligned (a misaligned-address fault on the GPU)");
}

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
