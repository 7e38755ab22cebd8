// stitch_emu_counting.cc: the hardware counters of the CUDA emulation
// (STITCH_EMU_COUNTERS; stitch_emu.h, "Hardware counters"; docs/perf-model.md).
// Compiled beside stitch_emu.cc in counting builds only (runtime_stub/host_backend.cc,
// tests/cuda_emu/tests.cmake); without the macro it is empty. The engine calls the
// hooks of stitch_emu_counting.h; stitch_emu_tsan.cc's entry points call record_access.
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
#include "stitch_emu.h"

#if defined(STITCH_EMU_COUNTERS)
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <list>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "stitch_emu_counting.h"

namespace stitch_emu {
namespace {

enum class AccessKind : uint8_t { kGlobalLoad, kGlobalStore, kSharedLoad, kSharedStore };

struct AccessRecord {
  uint32_t warp;  // warp index within the domain
  uint32_t occurrence;
  uint32_t sequence;  // the thread's accesses before this one (CountingThread::accesses)
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
  const CountingThread* thread;
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
  // With an L1 modelled: the sectors of the running domain's global load requests, in
  // the order count_request met them (LoadRequest ranges into it).
  std::vector<uint64_t> load_sectors;
  std::unordered_map<SiteKey, uint32_t, SiteKeyHash> occurrences;
  std::unordered_map<uintptr_t, uint64_t> atomic_hits;
  size_t launch_dynamic_shared_bytes = 0;
  // The running launch's critical path (StitchEmuCounters::global_load_chain): the
  // busiest warp's load requests summed over the grid barriers' phases (cooperative),
  // or the most of any block's warp (blocks run side by side), times its waves.
  LoadChain launch_chain_sum;
  LoadChain launch_chain_max;
  unsigned long long launch_waves = 1;
  std::vector<LoadChain> warp_loads;  // of the running domain, by warp
  // The running launch's warps per block and threads per block (the L1's blocks and
  // their share of it).
  unsigned int launch_warps_per_block = 1;
  unsigned int launch_block_threads = 0;
  // Warp-level requests per (site, kind) of the window, and the list end() leaves.
  std::map<std::pair<uintptr_t, int>, uint64_t> site_requests;
  std::vector<StitchEmuSite> sites;
};
CounterState g_counters;
thread_local int t_in_atomic = 0;

void set_bits(std::vector<uint64_t>& bits, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) bits[i / 64] |= uint64_t{1} << (i % 64);
}

}  // namespace

// Declared in stitch_emu.h; stitch_emu_tsan.cc's entry points call it.
void record_access(uintptr_t address, uint32_t size, bool store, uintptr_t site) {
  if (!g_counters.on || t_in_atomic != 0) return;
  const CountingThread* t = t_counting;
  if (t == nullptr || size == 0) return;
  const uintptr_t arena = reinterpret_cast<uintptr_t>(t->arena);
  AccessRecord record{t->domain_warp, 0, t->accesses++, site, 0, size, AccessKind::kGlobalLoad};
  if (address >= arena && address < arena + kMaxStaticSharedBytes) {
    if (!t->block_counted) return;
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
    if (!t->block_counted) return;  // sampled out: its bytes count as unique, no requests
    record.kind = store ? AccessKind::kGlobalStore : AccessKind::kGlobalLoad;
    record.address = address;
  }
  record.occurrence = g_counters.occurrences[SiteKey{t, site}]++;
  g_counters.records.push_back(record);
}

namespace {

// The byte ranges of one request as disjoint intervals [first, last), ascending. Lanes
// arrive in address order almost always, so the insertion sort is one pass.
struct Interval {
  uint64_t first;
  uint64_t last;
};
const std::vector<Interval>& merged_intervals(const AccessRecord* first, const AccessRecord* last) {
  static std::vector<Interval> intervals;  // counting is single-threaded
  intervals.clear();
  for (const AccessRecord* r = first; r != last; ++r) {
    const Interval range{r->address, r->address + r->size};
    size_t i = intervals.size();
    intervals.push_back(range);
    for (; i > 0 && intervals[i - 1].first > range.first; --i) intervals[i] = intervals[i - 1];
    intervals[i] = range;
  }
  size_t kept = 0;
  for (const Interval& range : intervals) {
    if (kept > 0 && range.first <= intervals[kept - 1].last) {
      intervals[kept - 1].last = std::max(intervals[kept - 1].last, range.last);
    } else {
      intervals[kept++] = range;
    }
  }
  intervals.resize(kept);
  return intervals;
}

// The distinct units of 2^shift bytes that the ascending disjoint intervals touch; each
// one also goes to `visit` once, in ascending order.
template <class Visit>
uint64_t count_units(const std::vector<Interval>& intervals, unsigned int shift, Visit visit) {
  uint64_t count = 0;
  bool any = false;
  uint64_t previous = 0;
  for (const Interval& range : intervals) {
    uint64_t unit = range.first >> shift;
    if (any && unit == previous) ++unit;
    for (const uint64_t end = (range.last - 1) >> shift; unit <= end; ++unit) {
      visit(unit);
      ++count;
      previous = unit;
      any = true;
    }
  }
  return count;
}

// Folds the records of one request [first, last) into the totals; a global load's
// sectors go to g_counters.load_sectors too when the L1 is modelled.
void count_request(const AccessRecord* first, const AccessRecord* last) {
  StitchEmuCounters& c = g_counters.launch;
  const AccessKind kind = first->kind;
  if (kind == AccessKind::kGlobalLoad) {
    std::vector<LoadChain>& loads = g_counters.warp_loads;
    if (loads.size() <= first->warp) loads.resize(first->warp + 1);
    ++loads[first->warp].loads;
  }
  ++g_counters.launch_site_requests[{first->site, static_cast<int>(kind)}];
  uint64_t bytes = 0;
  uint64_t wide_bytes = 0;  // of 128-bit lane accesses
  for (const AccessRecord* r = first; r != last; ++r) {
    bytes += r->size;
    if (r->size >= 16) wide_bytes += r->size;
  }
  const std::vector<Interval>& intervals = merged_intervals(first, last);
  uint64_t distinct_bytes = 0;
  for (const Interval& range : intervals) distinct_bytes += range.last - range.first;
  auto ignore = [](uint64_t) {};
  if (kind == AccessKind::kGlobalLoad || kind == AccessKind::kGlobalStore) {
    const bool keep = kind == AccessKind::kGlobalLoad && g_counters.limits.l1_bytes_per_sm != 0;
    const uint64_t sectors = count_units(intervals, 5, [keep](uint64_t sector) {
      if (keep) g_counters.load_sectors.push_back(sector);
    });
    const uint64_t lines = count_units(intervals, 7, ignore);
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
  unsigned int per_bank[32] = {};
  unsigned int wavefronts = 0;
  count_units(intervals, 2,
              [&](uint64_t word) { wavefronts = std::max(wavefronts, ++per_bank[word % 32]); });
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

// A block's share of the SM's L1 in 32-byte sectors: what the resident blocks' shared
// memory leaves of l1_bytes_per_sm, split among them (0: no L1 modelled).
uint64_t l1_sectors_per_block() {
  const uint64_t l1 = g_counters.limits.l1_bytes_per_sm;
  if (l1 == 0) return 0;
  const uint64_t shared = g_counters.totals.max_shared_bytes_per_block;
  const int coresident =
      counters::coresident_blocks(static_cast<int>(g_counters.launch_block_threads));
  uint64_t resident =
      std::max<uint64_t>(1, coresident / std::max<unsigned int>(g_counters.limits.sm_count, 1));
  if (shared > 0) resident = std::max<uint64_t>(1, std::min(resident, l1 / shared));
  return resident * shared >= l1 ? 0 : (l1 - resident * shared) / resident / 32;
}

// A global load request of the running domain: its first record, and its sectors in
// g_counters.load_sectors [sectors_begin, sectors_end).
struct LoadRequest {
  size_t record;
  size_t sectors_begin;
  size_t sectors_end;
};

// The L1 of each block over the domain's global load requests: least
// recently used sectors out, requests taken block by block in program order (their
// first lane's count of accesses), the warps of a block in step. Counts the sectors
// found there (they cost no L2 traffic) and, per warp, the requests found whole in
// sectors an earlier step loaded: a sector another warp's request of the same step
// brought in is still in flight, so it saves the traffic but not the wait.
void count_l1_hits(std::vector<LoadRequest>& requests) {
  const uint64_t capacity = l1_sectors_per_block();
  if (capacity == 0 || requests.empty()) return;
  const std::vector<AccessRecord>& records = g_counters.records;
  const unsigned int per_block = g_counters.launch_warps_per_block;
  auto block_of = [&](const LoadRequest& r) { return records[r.record].warp / per_block; };
  std::sort(requests.begin(), requests.end(), [&](const LoadRequest& a, const LoadRequest& b) {
    const AccessRecord& x = records[a.record];
    const AccessRecord& y = records[b.record];
    return std::tuple(block_of(a), x.sequence, x.warp) <
           std::tuple(block_of(b), y.sequence, y.warp);
  });
  struct Cached {
    std::list<uint64_t>::iterator place;
    uint32_t filled;  // the step (sequence) whose request brought it in
  };
  std::list<uint64_t> order;  // most recent first
  std::unordered_map<uint64_t, Cached> cached;
  uint32_t block = block_of(requests.front());
  for (const LoadRequest& request : requests) {
    if (block_of(request) != block) {
      block = block_of(request);
      order.clear();
      cached.clear();
    }
    const AccessRecord& first = records[request.record];
    uint64_t hits = 0;
    bool waited = false;  // a sector came from L2, now or in this step
    for (size_t s = request.sectors_begin; s < request.sectors_end; ++s) {
      const uint64_t sector = g_counters.load_sectors[s];
      auto it = cached.find(sector);
      if (it != cached.end()) {
        ++hits;
        waited = waited || it->second.filled == first.sequence;
        order.splice(order.begin(), order, it->second.place);
        continue;
      }
      waited = true;
      order.push_front(sector);
      cached.emplace(sector, Cached{order.begin(), first.sequence});
      if (order.size() > capacity) {
        cached.erase(order.back());
        order.pop_back();
      }
    }
    g_counters.launch.global_load_l1_hit_sectors += hits;
    if (!waited) ++g_counters.warp_loads[first.warp].l1_loads;
  }
}

}  // namespace

namespace counters {

LoadChain flush_domain() {
  std::vector<AccessRecord>& records = g_counters.records;
  std::sort(records.begin(), records.end(), [](const AccessRecord& a, const AccessRecord& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.warp != b.warp) return a.warp < b.warp;
    if (a.site != b.site) return a.site < b.site;
    return a.occurrence < b.occurrence;
  });
  std::vector<LoadRequest> loads;  // with an L1 modelled
  g_counters.load_sectors.clear();
  size_t start = 0;
  for (size_t i = 1; i <= records.size(); ++i) {
    if (i < records.size() && records[i].kind == records[start].kind &&
        records[i].warp == records[start].warp && records[i].site == records[start].site &&
        records[i].occurrence == records[start].occurrence) {
      continue;
    }
    const size_t sectors_begin = g_counters.load_sectors.size();
    count_request(records.data() + start, records.data() + i);
    if (g_counters.load_sectors.size() > sectors_begin) {
      loads.push_back({start, sectors_begin, g_counters.load_sectors.size()});
    }
    start = i;
  }
  count_l1_hits(loads);
  records.clear();
  g_counters.occurrences.clear();
  LoadChain busiest;
  for (const LoadChain& warp : g_counters.warp_loads) {
    if (warp.loads > busiest.loads) busiest = warp;
  }
  g_counters.warp_loads.clear();
  return busiest;
}

void end_phase(const LoadChain& busiest) {
  g_counters.launch_chain_sum.loads += busiest.loads;
  g_counters.launch_chain_sum.l1_loads += busiest.l1_loads;
}
void end_block(const LoadChain& busiest) {
  if (busiest.loads > g_counters.launch_chain_max.loads) g_counters.launch_chain_max = busiest;
}
void set_launch_waves(unsigned long long waves) { g_counters.launch_waves = waves; }

// Runs of
// kSampleRun consecutive blocks, every sample_stride-th run. A run of 32 rows covers
// every alignment a row of 4-byte elements can have to a 128-byte line, so a sample
// of runs sees the sectors and lines an evenly strided sample would alias with.
constexpr unsigned long long kSampleRun = 32;
bool block_counted(unsigned long long linear_block) {
  return g_counters.sample_stride <= 1 ||
         (linear_block / kSampleRun) % g_counters.sample_stride == 0;
}

// Scaled by blocks / counted blocks when the launch was sampled (rounded to the nearest
// count).
void fold_launch(unsigned long long blocks) {
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
  c.global_load_l1_hit_sectors += scaled(l.global_load_l1_hit_sectors);
  const LoadChain& sum = g_counters.launch_chain_sum;
  const LoadChain& most = g_counters.launch_chain_max;
  c.global_load_chain += sum.loads + most.loads * g_counters.launch_waves;
  c.global_load_chain_l1 += sum.l1_loads + most.l1_loads * g_counters.launch_waves;
  g_counters.launch_chain_sum = LoadChain{};
  g_counters.launch_chain_max = LoadChain{};
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
  g_counters.launch_warps_per_block = std::max(1u, (block_threads + 31) / 32);
  g_counters.launch_block_threads = block_threads;
}

bool on() { return g_counters.on; }
void count_block_barrier() {
  if (g_counters.on) ++g_counters.totals.block_barriers;
}
void count_grid_barrier() { ++g_counters.totals.grid_barriers; }
void count_warp_collective(bool shuffle) {
  ++(shuffle ? g_counters.totals.warp_shuffles : g_counters.totals.warp_votes);
}
void count_shared_arena(size_t bytes) {
  if (!g_counters.on) return;
  unsigned long long& most = g_counters.totals.max_shared_bytes_per_block;
  most = std::max<unsigned long long>(most, bytes + g_counters.launch_dynamic_shared_bytes);
}

// Threads, blocks and registers per SM; the static shared arena is left out, as the
// occupancy API's caller passes 0 for it.
int coresident_blocks(int block_threads) {
  const StitchEmuLimits& l = g_counters.limits;
  if (!g_counters.on || l.sm_count == 0 || block_threads <= 0) return 0;
  const unsigned int threads = (static_cast<unsigned int>(block_threads) + 31) / 32 * 32;
  const unsigned int registers = l.registers_per_thread != 0 ? l.registers_per_thread : 32;
  unsigned int per_sm = std::min(l.max_blocks_per_sm, l.max_threads_per_sm / threads);
  per_sm = std::min(per_sm, l.registers_per_sm / (registers * threads));
  return static_cast<int>(per_sm * l.sm_count);
}

}  // namespace counters

// Declared in stitch_emu.h: an atomic's own accesses count as one atomic.
void atomic_begin(const void* address) {
  if (t_in_atomic++ != 0 || !g_counters.on || t_counting == nullptr) return;
  ++g_counters.totals.atomics;
  ++g_counters.atomic_hits[reinterpret_cast<uintptr_t>(address)];
}
void atomic_end() { --t_in_atomic; }

}  // namespace stitch_emu

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
