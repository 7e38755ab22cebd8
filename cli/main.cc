// stitchopt: the command line. Exit codes: 0 success, 1 internal error, 2 bad input
// or usage, 3 a --min-* gate failed (DESIGN.md, cli/).
#include <CLI/CLI.hpp>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cli/compile.h"
#include "cli/exit_codes.h"
#include "cli/input_shape.h"
#include "cli/runtime_commands.h"
#include "ir/core/precision.h"
#include "ir/passes/pipeline.h"
#include "support/escape.h"

namespace {

// The documented bounds of numeric options (README.md, Usage): NaN and infinities
// fail every bound, and sizes past them would only exhaust memory or time.
constexpr int kMaxPatternSizeLimit = 4096;
constexpr double kMaxSolverSeconds = 86400;
constexpr double kMaxLaunchLatencyUs = 1e6;
constexpr double kMaxMinCompression = 1e6;

// A finite number in [low, high] (CLI11's own checks let NaN through).
CLI::Validator finite_between(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        char* end = nullptr;
        double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) ||
            value < low || value > high) {
          char bounds[96];
          std::snprintf(bounds, sizeof bounds, "a number from %g to %g", low, high);
          return "\"" + text + "\" is not " + bounds;
        }
        return "";
      },
      "");
}

using stitch::cli::kExitBadInput;
using stitch::cli::kExitInternal;
using stitch::cli::kExitOk;
using stitch::cli::report_error;

// --precision, --max-rel-error, --inputs and --io-precision (docs/precision.md).
void add_precision_options(CLI::App& app, stitch::cli::CompileOptions& options) {
  const std::map<std::string, stitch::ir::Precision> precisions = {
      {"fp32", stitch::ir::Precision::kFloat32},
      {"tf32", stitch::ir::Precision::kTf32},
      {"fp32x3", stitch::ir::Precision::kFloat32x3},
      {"bf16", stitch::ir::Precision::kBFloat16},
      {"fp16", stitch::ir::Precision::kFloat16}};
  app.add_option("--precision", options.schedule.precision,
                 "fp32 (default: strict float32), tf32 (float32 GEMMs and dense convolutions "
                 "on TF32 tensor cores, about 1e-3 relative error), fp32x3 (float32 accuracy "
                 "from three TF32 products), bf16 or fp16 (mixed precision: activations and "
                 "weights stored in the reduced type, statistics kept float32, graph inputs "
                 "and outputs keep their types); docs/precision.md")
      ->transform(CLI::CheckedTransformer(precisions, CLI::ignore_case));
  app.add_option(
         "--max-rel-error", options.max_rel_error,
         "exit 3 when an output's error at --precision (max |a - b| / max |float32 "
         "reference|, seeded inputs or --inputs) exceeds this; default: the precision's tolerance "
         "(tf32 5e-3, bf16 5e-2, fp16 1e-2, fp32x3 1e-5)")
      ->check(finite_between(0, 1));
  app.add_option("--inputs", options.precision_inputs,
                 "FILE.npz (numpy.savez): model inputs by name that --precision calibrates "
                 "its bf16/fp16 ranges on and measures its error on, instead of seeded "
                 "random inputs (repeatable: every sample counts)")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option_function<std::string>(
         "--io-precision",
         [&options](const std::string& value) { options.reduced_io = value == "reduced"; },
         "keep (default: float32 graph inputs and outputs keep their types) or reduced "
         "(--precision bf16/fp16: they take the reduced type, so callers feed and read "
         "half the bytes and no Cast kernel runs at the edges)")
      ->check(CLI::IsMember({"keep", "reduced"}));
}

// --score, --score-candidates and --nvdisasm: how candidates are scored.
void add_score_options(CLI::App& app, stitch::cli::CompileOptions& options) {
  app.add_option("--score", options.score,
                 "how candidates are scored: analytic (the cost model, default) or emulated "
                 "(candidates with a GEMM, the global composition or a close alternative are "
                 "run in the CUDA emulation and scored by their estimated time; "
                 "docs/cost-model.md)")
      ->check(CLI::IsMember({"analytic", "emulated"}));
  app.add_option("--score-candidates", options.score_candidates,
                 "--score emulated: the most distinct candidate kernels to time (1 to 4096)")
      ->check(CLI::Range(1, 4096));
  app.add_option(
      "--nvdisasm", options.nvdisasm,
      "--score emulated: nvdisasm for the instruction estimate (default: "
      "$STITCH_NVDISASM, PATH, the CUDA toolkit, PyPI's nvidia-cuda-nvdisasm in $VIRTUAL_ENV "
      "or the checkout's .venv)");
}

int run(int argc, char** argv) {
  if (argc >= 2 && stitch::cli::is_runtime_command(argv[1])) {
    return stitch::cli::runtime_command_main(argc, argv);
  }
  CLI::App app{
      "stitchopt: fuses the memory-intensive operators of an ONNX model into few, large\n"
      "CUDA kernels. Writes OUT/model.fused.onnx and OUT/report.json.\n"
      "Also: stitchopt run OUT, stitchopt bench OUT, stitchopt calibrate -o PROFILE.json\n"
      "(each with --help).",
      "stitchopt"};
  app.set_version_flag("--version", std::string("stitchopt ") + STITCH_VERSION);
  stitch::cli::CompileOptions options;
  std::vector<std::string> input_shape_flags;
  bool verbose = false;
  bool quiet = false;
  bool list_passes = false;
  std::string pass_list;
  app.add_option("model", options.model_path, "the ONNX model to compile");
  app.add_option("-o,--output", options.output_directory,
                 "output directory: new, empty or an earlier stitchopt output (replaced as a "
                 "whole when the run succeeds)");
  app.add_flag("--force", options.force,
               "replace the output directory even when it holds other files (never one that "
               "holds the model, the working directory or $HOME)");
  app.add_option("--input-shape", input_shape_flags,
                 "NAME=d0,d1,...: static dims for a graph input with dynamic dims "
                 "(repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  app.add_flag("--list-passes", list_passes, "print every simplification pass and exit");
  auto* passes_flag =
      app.add_option("--passes", pass_list,
                     "run exactly these simplification passes, comma-separated, in this order");
  app.add_option("--disable-pass", options.pipeline.disabled,
                 "leave this pass out of the pipeline (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--dump-ir-after", options.pipeline.dump_ir_after,
                 "write the textual IR after every run of this pass to OUT/ir/NN-PASS.ir");
  app.add_flag("--time-passes", options.time_passes, "print each pass's runs, changes and time");
  app.add_flag("--verify-each", options.pipeline.verify_each,
               "run the IR verifier after every pass");
  bool no_fusion = false;
  app.add_flag("--no-fusion", no_fusion, "skip fusion planning: write the simplified model");
  app.add_option("--device", options.device,
                 "device profile: v100, a100, h100 (default), h200, or a profile .json");
  app.add_option("--launch-mode", options.launch_mode,
                 "how the plan's kernels will be launched, which sets the launch latency phi "
                 "the planner charges: graph (default: replayed from one CUDA graph, as the "
                 "runtime does unless told otherwise) or host (a host launch each)")
      ->check(CLI::IsMember({"graph", "host"}));
  app.add_option("--launch-latency-us", options.launch_latency_us,
                 "launch latency phi in microseconds for the launch mode (overrides the "
                 "profile's)")
      ->check(finite_between(0, kMaxLaunchLatencyUs));
  bool no_exploratory = false;
  bool no_attention = false;
  bool no_packing = false;
  bool no_epilogue = false;
  bool no_stencils = false;
  bool no_stencil_tiles = false;
  bool unfused = false;
  app.add_flag("--no-exploratory", no_exploratory, "no exploratory patterns (Algorithm 2)");
  app.add_flag("--no-attention", no_attention,
               "no fused attention: no kernel holds a whole attention core (it runs as GEMM and "
               "softmax kernels)");
  app.add_flag("--no-packing", no_packing, "no packing of independent groups into one kernel");
  app.add_flag("--no-epilogue", no_epilogue,
               "no pointwise epilogues folded into cuBLASLt/cuDNN library calls (bias, "
               "residual add, ReLU; for float16 cuDNN graphs also clip, sigmoid, SiLU, ...)");
  app.add_flag("--no-stencils", no_stencils,
               "depthwise/grouped convolutions and pooling run as cuDNN calls instead of "
               "generated stencils fused with their neighbours");
  app.add_flag("--no-stencil-tiles", no_stencil_tiles,
               "generated stencils read their windows from global memory instead of a "
               "shared-memory input tile per block");
  add_precision_options(app, options);
  app.add_flag("--unfused", unfused,
               "no fusion at all: every op its own generated kernel or library call (the "
               "baseline for stitchopt bench)");
  app.add_option("--max-pattern-size", options.planner.candidates.max_pattern_size,
                 "largest exploratory pattern, in nodes (1 to 4096)")
      ->check(CLI::Range(1, kMaxPatternSizeLimit));
  app.add_option("--solver-time-limit", options.planner.plan.time_limit_s,
                 "wall-clock seconds for the GLPK plan; then the best incumbent or greedy")
      ->check(finite_between(0.001, kMaxSolverSeconds));
  app.add_option("--min-compression", options.min_compression,
                 "exit 3 when kernels.original / kernels.fused is below this")
      ->check(finite_between(0, kMaxMinCompression));
  bool no_codegen = false;
  app.add_flag("--no-codegen", no_codegen,
               "plan and rewrite without generating CUDA (no OUT/kernels/)");
  app.add_flag("--ptxas", options.ptxas,
               "compile every kernel with nvcc and put ptxas registers, spills and shared "
               "memory into the report");
  add_score_options(app, options);
  bool no_simplify = false;
  app.add_flag("--no-simplify", no_simplify,
               "skip simplification: write the imported model back unchanged");
  auto* verbose_flag = app.add_flag("-v,--verbose", verbose, "one line per phase with its time");
  app.add_flag("-q,--quiet", quiet, "print errors only")->excludes(verbose_flag);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    std::printf("%s\n", app.version().c_str());
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "stitchopt: error: %s; see stitchopt --help\n", error.what());
    return kExitBadInput;
  }

  if (list_passes) {
    for (const stitch::ir::Pass& pass : stitch::ir::list_passes()) {
      std::printf("%-18s %.*s\n", std::string(pass.name).c_str(),
                  static_cast<int>(pass.summary.size()), pass.summary.data());
    }
    return kExitOk;
  }
  if (options.model_path.empty() || options.output_directory.empty()) {
    std::fprintf(stderr, "stitchopt: error: %s is required; see stitchopt --help\n",
                 options.model_path.empty() ? "model" : "--output");
    return kExitBadInput;
  }
  options.simplify = !no_simplify;
  options.fuse = !no_fusion;
  options.codegen = !no_codegen;
  options.planner.candidates.exploratory = !no_exploratory;
  options.planner.candidates.packing = !no_packing;
  options.planner.candidates.epilogue = !no_epilogue;
  options.planner.candidates.attention = !no_attention;
  options.planner.partition.attention = !no_attention;
  options.planner.partition.stencils = !no_stencils;
  options.schedule.stencil_tiles = !no_stencil_tiles;
  if (unfused) {
    options.planner.candidates.attention = false;
    options.planner.partition.attention = false;
    options.planner.candidates.substitution = false;
    options.planner.candidates.exploratory = false;
    options.planner.candidates.packing = false;
    options.planner.candidates.epilogue = false;
  }
  options.pipeline.passes = stitch::ir::split_pass_list(pass_list);
  // An empty list means the default pipeline downstream: `--passes ""` (a variable
  // that expanded to nothing) must not silently run every pass.
  if (passes_flag->count() > 0 && options.pipeline.passes.empty()) {
    return report_error(stitch::Status::invalid_input(
        "--passes " + stitch::support::quote_bounded(pass_list) +
        " names no pass; list the passes to run (stitchopt --list-passes), or use "
        "--no-simplify to run none"));
  }
  for (const std::string& flag : input_shape_flags) {
    stitch::Status parsed = stitch::cli::parse_input_shape(flag, options.input_shapes);
    if (!parsed.is_ok()) return report_error(parsed);
  }
  options.verbosity = quiet     ? stitch::cli::Verbosity::kQuiet
                      : verbose ? stitch::cli::Verbosity::kVerbose
                                : stitch::cli::Verbosity::kNormal;
  stitch::Status status = stitch::cli::run_compile(options);
  if (!status.is_ok()) return report_error(status);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // A failed STITCH_CHECK has printed file, line and cause before aborting: that is
  // an internal error, exit code 1, not a crash signal.
  std::signal(SIGABRT, [](int) { std::_Exit(kExitInternal); });
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "stitchopt: internal error: %s; please report this with the model\n",
                 error.what());
    return kExitInternal;
  }
}
