// profile: `stitchopt profile OUT --emulate` (docs/perf-model.md). Runs every step of a
// compiled output once on random inputs: kernel steps in the CUDA emulation with its
// hardware counters on (host_backend.h, KernelCounterOptions), library and host steps
// with the reference interpreter. Each kernel launch gets the emulated performance
// model's estimate (cost_model/perf_model.h) and each library call the library
// estimate; the analytic estimate the planner uses (analytic_estimate: the step's
// body with the charges kernels.json recorded) is kept beside it, so the two can be
// compared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "artifact/stitch_emu_counters.h"
#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "cost_model/perf_model.h"
#include "ir/core/status.h"
#include "profiling/instruction_estimate.h"
#include "runtime_stub/program.h"

namespace stitch::profiling {

// The default of ProfileOptions::sample_blocks: launches of up to 128 blocks are
// counted exactly; larger grids (grid-stride loops over many rows, 1056 blocks on
// h100) are counted in 128 of their blocks, which makes the profile of an embedding
// table of 750,000 rows 10x faster and moves no bundled model's estimate by more than
// docs/perf-model.md says.
inline constexpr unsigned int kDefaultSampleBlocks = 128;

struct StepProfile {
  size_t step = 0;               // index in runtime::Program::steps
  std::string kind;              // "kernel" or "library"
  std::string kernel;            // kernel name, or the library ("cuBLASLt", "cuDNN")
  std::string node;              // the node's name
  std::string op_type;           // e.g. "stitch_k3" or "MatMul"
  std::string composition;       // fused kernels: thread/warp/block/global; else the op
  int64_t ideal_bytes = 0;       // the step's inputs + outputs, each read or written once
  double flops = 0;              // analytic_estimate
  double analytic_us = 0;        // analytic_estimate: the planner's estimate of the launch
  int registers = 0;             // ptxas, from report.json when compiled with --ptxas
  StitchEmuCounters counters{};  // kernels only
  std::optional<InstructionCount> instructions;  // kernels, when SASS was available
  cost_model::KernelEstimate estimate;
};

struct ProgramProfile {
  std::string device;                   // the profile's name
  std::string launch_mode;              // "graph" or "host": the phi each launch is charged
  double launch_latency_us = 0;         // that phi
  std::vector<StepProfile> steps;       // kernel and library steps, plan order
  std::vector<std::string> host_steps;  // steps evaluated on the host (not estimated)
  int64_t view_steps = 0;
  double total_estimated_us = 0;
  double total_analytic_us = 0;
  // How instructions were estimated ("SASS sm_90 (nvdisasm), ...") or why they were not.
  std::string instructions_method;
  // The instruction estimate was asked for but nvcc or nvdisasm was not found
  // (cuda_tools.h): every kernel's estimate lacks its compute and latency terms, so the
  // times are lower bounds. profile.json's "partial"; the CLI warns on stderr.
  bool partial = false;
  unsigned int sample_blocks = 0;  // ProfileOptions::sample_blocks
  int64_t sampled_launches = 0;    // kernel steps whose requests were sampled
};

struct ProfileOptions {
  cost_model::DeviceProfile device;
  uint64_t seed = 0;
  std::string cxx;  // C++ compiler for the emulation (empty: $CXX, else the build's)
  bool verbose = false;
  std::map<std::string, int> kernel_registers;  // by kernel name (ptxas)
  // The instruction estimate (instruction_estimate.h): nvcc and nvdisasm (empty: found
  // as cuda_tools.h says); the SASS is for the device's generation
  // (cost_model::sass_architecture).
  bool instructions = true;
  std::string nvcc;
  std::string nvdisasm;
  // Block sampling (StitchEmuLimits::sample_blocks, docs/perf-model.md): a launch of
  // more blocks counts the requests of this many, spread over its grid, and scales
  // them; 0 counts every block.
  unsigned int sample_blocks = kDefaultSampleBlocks;
};

Result<ProgramProfile> profile_program(const runtime::Program& program,
                                       const ProfileOptions& options);

// The analytic estimate of one launch of `step` (StepProfile::analytic_us and flops):
// cost_model::estimate_group of its body, for a kernel with the charges kernels.json
// recorded for it (Step::charges), never a schedule built again with default options.
// On the device the model was compiled for it is the kernel's predicted_time_us
// (kernels.json, report.json).
cost_model::GroupCost analytic_estimate(const runtime::Step& step,
                                        const cost_model::DeviceProfile& device);

// What ran and what was counted, e.g. "emulated: ...; 3 launches of more than 128
// blocks had the requests of a sample of their blocks ... counted and scaled ...".
std::string sampling_text(const ProgramProfile& profile);

// OUT/profile.json ("schema": "stitchopt.profile/1", docs/report-schema.md).
std::string profile_json(const ProgramProfile& profile);

}  // namespace stitch::profiling
