// profile: `stitchopt profile OUT --emulate` (docs/perf-model.md). Runs every step of a
// compiled output once on random inputs: kernel steps in the CUDA emulation with its
// hardware counters on (host_backend.h, KernelCounterOptions), library and host steps
// with the reference interpreter. Each kernel launch gets the emulated performance
// model's estimate (cost_model/perf_model.h) and each library call the library
// estimate; the analytic estimate the planner uses (cost_model::estimate_group on the
// step's body) is kept beside it, so the two can be compared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/device_profile.h"
#include "cost_model/perf_model.h"
#include "emit/cuda/stitch_emu_counters.h"
#include "ir/core/status.h"
#include "runtime_stub/instruction_estimate.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

struct StepProfile {
  size_t step = 0;               // index in Program::steps
  std::string kind;              // "kernel" or "library"
  std::string kernel;            // kernel name, or the library ("cuBLASLt", "cuDNN")
  std::string node;              // the node's name
  std::string op_type;           // e.g. "stitch_k3" or "MatMul"
  std::string composition;       // fused kernels: thread/warp/block/global; else the op
  int64_t ideal_bytes = 0;       // the step's inputs + outputs, each read or written once
  double flops = 0;              // analytic (cost_model::estimate_group on the body)
  double analytic_us = 0;        // the planner's estimate of the same launch
  int registers = 0;             // ptxas, from report.json when compiled with --ptxas
  StitchEmuCounters counters{};  // kernels only
  std::optional<InstructionCount> instructions;  // kernels, when SASS was available
  cost_model::KernelEstimate estimate;
};

struct ProgramProfile {
  std::string device;                   // the profile's name
  std::vector<StepProfile> steps;       // kernel and library steps, plan order
  std::vector<std::string> host_steps;  // steps evaluated on the host (not estimated)
  int64_t view_steps = 0;
  double total_estimated_us = 0;
  double total_analytic_us = 0;
  // How instructions were estimated ("SASS sm_90 (nvdisasm), ...") or why they were not.
  std::string instructions_method;
};

struct ProfileOptions {
  cost_model::DeviceProfile device;
  uint64_t seed = 0;
  std::string cxx;  // C++ compiler for the emulation (empty: $CXX, else the build's)
  bool verbose = false;
  std::map<std::string, int> kernel_registers;  // by kernel name (ptxas)
  // The instruction estimate (instruction_estimate.h): nvcc and nvdisasm (empty: found
  // on PATH, $STITCH_NVDISASM, the CUDA toolkit); the SASS is for the device's
  // generation (cost_model::sass_architecture).
  bool instructions = true;
  std::string nvcc;
  std::string nvdisasm;
};

Result<ProgramProfile> profile_program(const Program& program, const ProfileOptions& options);

// OUT/profile.json ("schema": "stitchopt.profile/1", docs/report-schema.md).
std::string profile_json(const ProgramProfile& profile);

}  // namespace stitch::runtime
