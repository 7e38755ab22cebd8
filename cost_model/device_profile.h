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
// {"bytes": N, "bytes_per_second": B} objects sorted by strictly increasing bytes.
// "sku" and "note" are optional free text. Any other key is an error (a typo must not
// silently fall back to nothing).
//
// Every number has a range: wide enough for every NVIDIA GPU from V100 to well past
// H200, tight enough that no fusion score, estimate or emulated launch overflows or
// becomes impossible (a latency of 1e308 us made scores infinite; 1 thread or 1
// register per SM left no block resident). Integers:
//   sm_count                        1 .. 4096
//   max_threads_per_block           1024 .. 4096 (every GPU allows 1024; the emitted
//                                   kernels launch up to 512 threads)
//   max_threads_per_sm              1024 .. 65536, >= max_threads_per_block
//   warp_size                       32 (the emitted kernels' shuffles assume 32 lanes)
//   registers_per_block             65536 .. 1048576 (1024 threads of 64 registers)
//   registers_per_sm                65536 .. 1048576, >= registers_per_block
//   shared_memory_per_block         49152 (kernels launch without the opt-in
//                                   attribute, so CUDA's default 48 KiB applies)
//   shared_memory_per_block_optin   49152 .. 4194304
//   shared_memory_per_sm            49152 .. 4194304, >= shared_memory_per_block_optin
//   l1_bytes_per_sm                 0 .. 4194304, 0 or >= shared_memory_per_sm (optional)
//   l2_bytes                        1 MiB .. 4 GiB
//   max_blocks_per_sm               1 .. 1024
// Numbers:
//   peak_dram_bytes_per_second      1e9 .. 1e15
//   bandwidth_curve bytes           1 .. 1e15, strictly increasing
//   bandwidth_curve bytes_per_second 1e3 .. 1e15
//   launch_latency_us               0 .. 1e6 (what --launch-latency-us accepts)
//   fp32/fp16_flops_per_second      1e9 .. 1e18
//   fp64_flops_per_second           1e8 .. 1e18
//   sm_clock_hz                     1e8 .. 1e11
//   l2_bytes_per_second             1e9 .. 1e16
//   block_barrier_cycles            1 .. 1e5
//   grid_barrier_us                 1e-3 .. 1e6
//   atomic_same_address_ns          1e-3 .. 1e6
//   global_load_latency_ns          1 .. 1e6
//   library_efficiency              1e-3 .. 1
// The "calibration" block (struct Calibration below; docs/cost-model.md, "Calibration"),
// every key required, and "provenance" naming for each key the run that fitted it:
//   sass_architecture               "sm_70" .. "sm_129" ("sm_" and the compute
//                                   capability's two or three digits)
//   warp_schedulers_per_sm          1 .. 8
//   integer_lanes_per_sm_clock      1 .. 256 (also special_, memory_)
//   *_instructions_per_mac          0.1 .. 1000 (thread_gemm_, tiled_gemm_, attention_)
//   *_load_share                    0 .. 1 (recomputed_dot_, gemm_, stencil_)
//   recomputed_leaf_bytes           1 .. 64
//   graph_launch_latency_us         0 .. 1e6
// Errors name the file (or "builtin profile h100"), the key, the value and the range:
//   <source>: key "sm_count": expected an integer, got a string
//   <source>: key "warp_size": must be 32 (every NVIDIA GPU has 32-lane warps, and the
//             emitted kernels' shuffles assume them), got 7
//   <source>: key "bandwidth_curve": point 2: bytes 4096 must be greater than the
//             previous point's 16384 (sort the curve by bytes, no duplicates)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/core/precision.h"
#include "ir/core/status.h"

namespace stitch::cost_model {

struct BandwidthPoint {
  double bytes;
  double bytes_per_second;
};

// The performance model's constants that are not datasheet facts: the rates the
// issue terms assume, the SASS instructions and load waits per unit of work that
// `stitchopt profile --emulate` and the lent GPUs measured, and the architecture
// stitchopt reads SASS for. Both the analytic estimate (cost_model.h: the composition
// charges) and the emulated one (perf_model.h) read them here, so one profile holds
// every number that turns work into time. Each one's provenance (which run fitted it,
// on which GPU) travels with it in the JSON; the shipped a100, v100 and h200 profiles
// carry the H100's fits until a run on those GPUs fits theirs, and say so.
struct Calibration {
  // The SASS architecture the kernels are compiled for when stitchopt reads their
  // machine code (--ptxas, `profile`'s instruction estimate): the GPU's own, "sm_90".
  std::string sass_architecture;
  // Issue rates per SM and clock: warp schedulers (each issues one warp instruction a
  // clock), and the lanes of the integer, special-function (MUFU, conversions) and
  // load/store pipes. The FP32 and FP64 pipes follow from the profile's peaks.
  double warp_schedulers_per_sm;
  double integer_lanes_per_sm_clock;
  double special_lanes_per_sm_clock;
  double memory_lanes_per_sm_clock;
  // Issued SASS instructions per multiply-add and lane of the generated CUDA-core GEMMs
  // (cost_model.h, KernelShape): one output per thread, shared tiles, and the attention
  // composition's two GEMMs.
  double thread_gemm_instructions_per_mac;
  double tiled_gemm_instructions_per_mac;
  double attention_instructions_per_mac;
  // The share of a load chain's requests a warp waits out: dot products recomputed in
  // an attention prologue, the loops of the thread/packing/global compositions, and a
  // stencil's taps (cost_model.h, KernelShape's load chains).
  double recomputed_dot_load_share;
  double gemm_load_share;
  double stencil_load_share;
  // Bytes one leaf of an inlined expression reads from L2 each time the expression is
  // recomputed (the schedule's choice between recomputing a value and materializing it).
  double recomputed_leaf_bytes;
  // One kernel launch replayed from a captured CUDA graph: phi under --launch-mode
  // graph (launch_phi), where launch_latency_us is the host launch's.
  double graph_launch_latency_us;
  // (key, where its value comes from), one per key above, in the order of the JSON.
  std::vector<std::pair<std::string, std::string>> provenance;
};

// How a plan's kernels and library calls are launched (--launch-mode, graph replay by default:
// docs/cost-model.md says why), which sets the launch latency phi every score and
// estimate charges per launch (launch_phi): replayed from one captured CUDA graph (what
// the runtime does unless told otherwise, runtime::SessionOptions::cuda_graphs;
// calibration.graph_launch_latency_us) or one host launch each (launch_latency_us).
enum class LaunchMode { kGraph, kHost };
// "graph", "host": the --launch-mode spelling and report.json's device.launch_mode.
std::string_view launch_mode_name(LaunchMode mode);
// The mode `name` spells, or nullopt.
std::optional<LaunchMode> parse_launch_mode(std::string_view name);

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
  // L1 data cache and shared memory together (one SM's unified array): the emulated
  // profile's L1 (docs/perf-model.md, "L1"). 0 where the profile does not say (the key
  // is optional): no L1 in the estimate.
  int64_t l1_bytes_per_sm = 0;
  int64_t l2_bytes;
  double peak_dram_bytes_per_second;
  std::vector<BandwidthPoint> bandwidth_curve;  // sorted by bytes
  double launch_latency_us;
  double fp32_flops_per_second;
  double fp16_flops_per_second;
  // Dense TF32 tensor-core peak (--precision tf32); 0 where the GPU has none (V100) or
  // the profile does not say (the key is optional): tf32 estimates then use fp32's.
  double tf32_flops_per_second = 0;
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
  Calibration calibration;        // the model's fitted constants, with their provenance
  // Not a device fact, never read from or written to JSON: the products the estimates
  // are made for (--precision; driver::compile and `stitchopt profile` set it). It picks
  // the peak a float32 GEMM or dense Conv runs at and the tiled MatMul's instruction
  // count (docs/cost-model.md, "Precision").
  ir::Precision products = ir::Precision::kFloat32;
  // Not a device fact either: the launch mode the plan is made for (--launch-mode;
  // `stitchopt profile` reads it from report.json). Host unless set, so a profile read
  // alone charges its own launch_latency_us.
  LaunchMode launch_mode = LaunchMode::kHost;
};

// phi: the latency of one launch under the profile's launch mode.
double launch_phi(const DeviceProfile& profile);
// Sets the phi of the profile's launch mode (--launch-latency-us).
void set_launch_phi(DeviceProfile* profile, double microseconds);

// One grid barrier of a cooperative launch of `blocks` blocks: grid_barrier_us is the
// barrier of one block per SM (what `stitchopt calibrate` times), and each block's
// arrival is an atomic on one counter, which serialize at atomic_same_address_ns, so
// every block more or fewer than sm_count adds or takes that much:
//   grid_barrier_us + (blocks - sm_count) x atomic_same_address_ns.
// blocks <= 0 (unknown): grid_barrier_us. On the H100 (docs/benchmarks.md, issue 16)
// rnn_unrolled's 23 barriers at 8 blocks per SM against 2 measured 100 against 87 us:
// 0.71 ns per block more, where the h100 profile's 1 ns gives 0.79 us per barrier.
double grid_barrier_time_us(const DeviceProfile& profile, double blocks);

// Reads and validates a JSON profile; errors start with `path: `. Only a regular file
// of at most 1 MiB is read (support/bounded_file.h: a FIFO or /dev/zero is refused
// before it is read); the user's own symbolic link is followed.
Result<DeviceProfile> load_device_profile(const std::string& path);
// The profile as JSON in the format load_device_profile reads (keys in the order of
// the shipped profiles, "sku" and "note" when non-empty). What `stitchopt calibrate`
// writes; parse_device_profile(device_profile_json(p)) gives p back.
std::string device_profile_json(const DeviceProfile& profile);

// --device: a built-in profile name ("h100") or the path of a profile .json. An
// unknown name is an error listing the known ones.
Result<DeviceProfile> resolve_device_profile(const std::string& device);

// The SASS architecture kernels are compiled for when stitchopt reads their machine
// code (--ptxas, `profile`'s instruction estimate): the profile's
// calibration.sass_architecture, the GPU's own (sm_70 for V100, which CUDA 13's nvcc
// no longer targets: reading V100 SASS needs a CUDA 12 toolkit).
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
// Checks every number of `profile` against its range above, the curve's order and the
// per-block limits against the per-SM ones; errors read as parse_device_profile's,
// prefixed by `source_name`. parse_device_profile runs it; so must code that changes a
// loaded profile's fields (--launch-latency-us, a calibrated profile before it is
// written).
Status validate_device_profile(const DeviceProfile& profile, std::string_view source_name);

}  // namespace stitch::cost_model
