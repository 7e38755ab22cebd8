// The compile command: stitchopt MODEL -o OUT (cli/output_dir.h stages OUT).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emit/schedule.h"
#include "fusion/planner.h"
#include "ir/core/status.h"
#include "ir/passes/pipeline.h"

namespace stitch::cli {

enum class Verbosity { kQuiet, kNormal, kVerbose };

struct CompileOptions {
  std::string model_path;
  std::string output_directory;
  bool force = false;  // --force: replace OUT even when it is not an earlier output
  std::map<std::string, std::vector<int64_t>> input_shapes;
  Verbosity verbosity = Verbosity::kNormal;
  bool simplify = true;               // false: --no-simplify
  bool time_passes = false;           // --time-passes: per-pass table on stderr
  ir::PipelineOptions pipeline;       // --passes, --disable-pass, --dump-ir-after, --verify-each
  bool fuse = true;                   // false: --no-fusion
  std::string device = "h100";        // --device: a built-in profile name or a profile .json
  std::string launch_mode = "graph";  // --launch-mode (cost_model::LaunchMode)
  double launch_latency_us = -1;      // --launch-latency-us: overrides the launch mode's phi
  fusion::PlannerOptions planner;     // --no-exploratory, --no-packing, --max-pattern-size, ...
  emit::ScheduleOptions schedule;     // --no-stencil-tiles, --precision
  double max_rel_error = -1;          // --max-rel-error: exit 3 above it (negative: the default)
  // --inputs: .npz files of model inputs the precision check and calibration run on.
  std::vector<std::string> precision_inputs;
  bool reduced_io = false;     // --io-precision reduced (bf16/fp16 only)
  double min_compression = 0;  // --min-compression: exit 3 below it (0: no gate)
  bool codegen = true;         // false: --no-codegen (no out/kernels/)
  bool ptxas = false;          // --ptxas: registers/spills/shared memory from nvcc
  // --score: "analytic" (the cost model alone) or "emulated" (candidates the analytic
  // score is unsure of are timed by the emulated profile: driver/candidate_timer.h).
  std::string score = "analytic";
  int score_candidates = 48;  // --score-candidates: most distinct kernels timed
  std::string nvdisasm;       // --nvdisasm: for the emulated score's instruction estimate
};

// Imports and verifies the model, compiles it with driver::compile (driver/compile.h)
// and stages the result in OUT: model.fused.onnx, kernels/, report.json, plan.dot
// (and ir/NN-PASS.ir with --dump-ir-after). Progress goes to stderr (one line per
// phase with -v). Returns the first error.
Status run_compile(const CompileOptions& options);

}  // namespace stitch::cli
