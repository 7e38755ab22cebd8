// DeviceProfile: what the cost model knows about a GPU, loaded from JSON.
//
// A profile holds datasheet limits (SMs, threads, registers, shared memory default
// and opt-in per block and per SM, L2, peak DRAM bandwidth, fp32/fp16 peaks) and two
// measured quantities: the bandwidth curve (bytes moved by one kernel -> achieved
// bytes/s, FusionStitching Fig. 4) and the launch latency phi. Profiles for V100,
// A100, H100 and H200 ship in cost_model/profiles/*.json and are compiled into the
// binary (CMake turns each file into a string literal, so the JSON files stay the
// single source of truth). Their curve and phi carry "source": "estimate" until
// `stitchopt calibrate` measures them on a real GPU and writes "calibrated".
//
// JSON keys are the field names below; "bandwidth_curve" is a list of
// {"bytes": N, "bytes_per_second": B} objects sorted by strictly increasing bytes,
// every number positive. "sku" and "note" are optional free text. Any other key is
// an error (a typo must not silently fall back to nothing). Errors read
//   <source>: key "sm_count": expected an integer, got a string
//   <source>: key "bandwidth_curve": point 2: bytes 4096 must be greater than the
//             previous point's 16384 (sort the curve by bytes, no duplicates)
// naming the file (or "builtin profile h100") and the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/status.h"

namespace stitch::cost_model {

struct BandwidthPoint {
  double bytes;
  double bytes_per_second;
};

struct DeviceProfile {
  std::string name;
  std::string source;  // "estimate" | "calibrated"
  std::string date;
  std::string sku;   // optional: the product name ("NVIDIA H100 80GB HBM3")
  std::string note;  // optional: where the numbers come from
  int sm_count;
  int max_threads_per_block;
  int max_threads_per_sm;
  int warp_size;
  int registers_per_block;
  int registers_per_sm;
  int64_t shared_memory_per_block;  // default 48 KiB
  int64_t shared_memory_per_block_optin;
  int64_t shared_memory_per_sm;
  int64_t l2_bytes;
  double peak_dram_bytes_per_second;
  std::vector<BandwidthPoint> bandwidth_curve;  // sorted by bytes
  double launch_latency_us;
  double fp32_flops_per_second;
  double fp16_flops_per_second;
  // What the emulated performance model needs beyond the above (docs/perf-model.md has
  // the formulas, docs/cost-model.md the sources):
  double sm_clock_hz;             // boost clock
  int max_blocks_per_sm;          // resident blocks per SM
  double l2_bytes_per_second;     // L2 <-> SM bandwidth, all SMs
  double fp64_flops_per_second;   // FP64 on CUDA cores (not tensor cores)
  double block_barrier_cycles;    // one __syncthreads, per block
  double grid_barrier_us;         // one grid-wide barrier of a cooperative launch
  double atomic_same_address_ns;  // atomics to one address serialize at this interval
  double global_load_latency_ns;  // a warp's wait for one global load (L2 or DRAM)
  double library_efficiency;      // cuBLAS/cuDNN: fraction of peak FLOP/s reached
};

// Reads and validates a JSON profile; errors start with `path: `.
Result<DeviceProfile> load_device_profile(const std::string& path);
// The profile as JSON in the format load_device_profile reads (keys in the order of
// the shipped profiles, "sku" and "note" when non-empty). What `stitchopt calibrate`
// writes; parse_device_profile(device_profile_json(p)) gives p back.
std::string device_profile_json(const DeviceProfile& profile);

// --device: a built-in profile name ("h100") or the path of a profile .json. An
// unknown name is an error listing the known ones.
Result<DeviceProfile> resolve_device_profile(const std::string& device);

// The SASS architecture kernels are compiled for when stitchopt reads their machine
// code (--ptxas, `profile`'s instruction estimate): sm_80 for the A100 and V100
// profiles (CUDA 13 has no sm_70), sm_90 for H100, H200 and calibrated profiles of
// recent GPUs.
std::string sass_architecture(const DeviceProfile& profile);

// "v100", "a100", "h100", "h200": the profiles compiled into the binary. An unknown
// name is an error listing the known ones.
Result<DeviceProfile> builtin_device_profile(std::string_view name);
// The names builtin_device_profile accepts, sorted.
std::vector<std::string> builtin_device_profile_names();
// Parses and validates `json_text`; `source_name` (a path or "builtin profile h100")
// prefixes every error message.
Result<DeviceProfile> parse_device_profile(std::string_view json_text,
                                           std::string_view source_name);

}  // namespace stitch::cost_model
