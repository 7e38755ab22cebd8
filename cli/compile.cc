// The compile command: stitchopt MODEL -o OUT: import, driver::compile, stage to disk.
#include "cli/compile.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "cli/output_dir.h"
#include "cost_model/device_profile.h"
#include "driver/candidate_timer.h"
#include "driver/compile.h"
#include "emit/kernel_directory.h"
#include "emit/onnx_writer.h"
#include "emit/plan_dot.h"
#include "emit/ptxas_stats.h"
#include "emit/report.h"
#include "ir/core/precision.h"
#include "ir/core/verifier.h"
#include "ir/passes/pipeline.h"
#include "ir/shapes/shape_inference.h"
#include "ir/shapes/symbolic_dims.h"
#include "onnx_import/importer.h"
#include "runtime_stub/feeds.h"
#include "runtime_stub/npz.h"
#include "support/bounded_file.h"
#include "support/escape.h"
#include "support/sha256.h"
#include "support/subprocess.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

// "phase: 0.123 s" on stderr in verbose mode, as each phase ends.
void print_phase(Verbosity verbosity, const emit::PhaseTiming& phase) {
  if (verbosity == Verbosity::kVerbose) {
    std::fprintf(stderr, "stitchopt: %-8s %8.3f s\n", phase.name.c_str(), phase.seconds);
  }
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::invalid_input(path + ": cannot open the model (" + std::strerror(errno) +
                                 "); check the path");
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

Status write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Status::invalid_input("cannot write " + path.string());
  return Status::ok();
}

void print_pass_table(const ir::SimplifyStatistics& statistics) {
  std::fprintf(stderr, "stitchopt: %-18s %5s %8s %8s %10s\n", "pass", "runs", "removed", "added",
               "seconds");
  for (const ir::PassStatistics& pass : statistics.passes) {
    std::fprintf(stderr, "stitchopt: %-18s %5lld %8lld %8lld %10.4f\n", pass.name.c_str(),
                 static_cast<long long>(pass.runs), static_cast<long long>(pass.nodes_removed),
                 static_cast<long long>(pass.nodes_added), pass.seconds);
  }
  std::fprintf(stderr, "stitchopt: %lld -> %lld nodes in %d rounds%s\n",
               static_cast<long long>(statistics.nodes_before),
               static_cast<long long>(statistics.nodes_after), statistics.iterations,
               statistics.reached_fixed_point ? "" : " (stopped before a fixed point)");
}

// plan.svg from plan.dot when Graphviz's `dot` is installed. Graphviz takes minutes
// on graphs of many thousand nodes and can take longer still on small but wide ones
// (a Sum of 150 inputs), so larger plans get only the .dot file and dot runs under a
// time limit; either way the picture is skipped with a warning, never the run.
void render_svg(const fs::path& dot, int64_t num_nodes, Verbosity verbosity) {
  constexpr int64_t kMaxNodesForSvg = 1500;
  constexpr double kDotTimeoutSeconds = 10;
  auto skipped = [&](const std::string& why) {
    if (verbosity != Verbosity::kQuiet) {
      std::fprintf(stderr, "stitchopt: warning: no plan.svg (%s); plan.dot is written\n",
                   why.c_str());
    }
  };
  std::string graphviz = support::find_executable("dot");
  if (graphviz.empty()) {
    if (verbosity == Verbosity::kVerbose) {
      std::fprintf(stderr, "stitchopt: no plan.svg (Graphviz's dot is not installed)\n");
    }
    return;
  }
  if (num_nodes > kMaxNodesForSvg) {
    skipped("the graph has " + std::to_string(num_nodes) + " nodes, over the " +
            std::to_string(kMaxNodesForSvg) + " Graphviz lays out in reasonable time");
    return;
  }
  fs::path svg = dot;
  svg.replace_extension(".svg");
  support::ProcessOptions options;
  options.timeout_seconds = kDotTimeoutSeconds;
  support::ProcessResult result =
      support::run_process({graphviz, "-Tsvg", dot.string(), "-o", svg.string()}, options);
  if (!result.succeeded()) {
    std::error_code ignored;
    fs::remove(svg, ignored);
    skipped("dot " + result.failure());
  }
}

// OUT/kernels/ (each distinct kernel once) and, with --ptxas, every kernel's
// registers, spills and shared memory into the report's codegen.
Status write_kernels(driver::CompiledModel& compiled, const fs::path& kernels, bool ptxas,
                     const cost_model::DeviceProfile& profile, emit::PhaseTimer& timer) {
  STITCH_RETURN_IF_ERROR(timer.time(
      "kernels", [&] { return emit::write_kernel_directory(compiled.kernels, kernels); }));
  if (!ptxas) return Status::ok();
  std::optional<fs::path> nvcc = emit::find_nvcc();
  if (!nvcc) {
    return Status::invalid_input(
        "--ptxas needs nvcc (set CUDACXX or install the CUDA toolkit); none was found");
  }
  const std::string arch = cost_model::sass_architecture(profile);
  return timer.time("ptxas", [&]() -> Status {
    std::map<std::string, emit::PtxasStats> by_kernel;
    for (const emit::EmittedKernel& kernel : compiled.kernels) {
      STITCH_ASSIGN_OR_RETURN(std::vector<emit::PtxasStats> functions,
                              emit::run_ptxas(*nvcc, kernels / kernel.file, {kernels}, arch));
      by_kernel[kernel.name] = emit::summarize_ptxas(functions);
    }
    emit::ReportPlan& plan = *compiled.report.plan;
    for (auto* list : {&plan.group_codegen, &plan.unfused_codegen}) {
      for (std::optional<emit::ReportCodegen>& codegen : *list) {
        if (codegen) codegen->ptxas = by_kernel.at(codegen->kernel->name);
      }
    }
    return Status::ok();
  });
}

// Protobuf parses messages of up to 2 GiB - 1 bytes.
constexpr size_t kMaxModelBytes = INT_MAX;

// The model must be a regular file (a link to one is fine: the user may have made
// it). A FIFO would block the read and a device such as /dev/zero never end it, so
// neither is opened; each is named, not called missing.
Status check_model_file(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  switch (status.type()) {
    case fs::file_type::regular:
      return Status::ok();
    case fs::file_type::not_found:
      return Status::invalid_input(path + ": no such model file; pass the path of a .onnx file");
    case fs::file_type::directory:
    case fs::file_type::fifo:
    case fs::file_type::character:
    case fs::file_type::block:
    case fs::file_type::socket: {
      const fs::file_type type = status.type();
      const char* kind = type == fs::file_type::directory ? "a directory"
                         : type == fs::file_type::fifo    ? "a FIFO"
                         : type == fs::file_type::socket  ? "a socket"
                                                          : "a device";
      return Status::invalid_input(path + ": is " + kind +
                                   ", not a regular file; pass the path of a .onnx file");
    }
    default:
      return Status::invalid_input(path + ": cannot read the model (" + error.message() +
                                   "); check the path");
  }
}

// `stitchopt run` plans memory for static shapes only, so an output whose shapes are
// not all known is refused here rather than there: after simplification with static
// inputs, only a data-dependent op (NonZero, Unique, a TopK k computed from data) or an
// op without a shape rule leaves a shape unknown.
Status check_static_types(const ir::Graph& graph, const std::string& model_path) {
  const int64_t unknown = ir::count_unknown_types(graph);
  if (unknown == 0) return Status::ok();
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::UnknownTypeRoot> roots, ir::unknown_type_roots(graph, 3));
  std::string from;
  for (size_t i = 0; i < roots.size(); ++i) {
    from += (i == 0                  ? ""
             : i + 1 == roots.size() ? " and "
                                     : ", ") +
            roots[i].display_name +
            (roots[i].reason == "data-dependent" ? ", whose output shape depends on tensor values"
                                                 : ", which stitchopt has no shape rule for");
  }
  return Status::invalid_input(
      model_path + ": " + std::to_string(unknown) +
      " node outputs have no static shape after simplification, starting at " + from +
      "; stitchopt compiles models whose shapes are all known at compile time: run that part "
      "of the model outside stitchopt (split the graph before it)");
}

// `--score emulated`'s timer: probes compiled as the plan would emit them (the same
// device and schedule options), written under `work_dir`.
std::unique_ptr<fusion::CandidateTimer> emulated_timer(const CompileOptions& options,
                                                       const cost_model::DeviceProfile& device,
                                                       const fs::path& work_dir) {
  driver::EmulatedTimerOptions timer;
  timer.profile.device = device;
  timer.profile.nvdisasm = options.nvdisasm;
  timer.profile.verbose = options.verbosity == Verbosity::kVerbose;
  timer.schedule = options.schedule;
  timer.work_dir = work_dir.string();
  timer.max_candidates = options.score_candidates;
  return driver::make_emulated_timer(std::move(timer));
}

// --inputs and --io-precision need a --precision that reads them: exit 2, not ignored.
Status check_precision_options(const CompileOptions& options) {
  if (options.reduced_io && !ir::reduces_storage(options.schedule.precision)) {
    return Status::invalid_input(
        "--io-precision reduced: the graph inputs and outputs take --precision's reduced "
        "type; give --precision bf16 or fp16");
  }
  if (!options.precision_inputs.empty() && options.schedule.precision == ir::Precision::kFloat32) {
    return Status::invalid_input(
        "--inputs: the data --precision calibrates and measures its error on; --precision "
        "fp32 (the default) measures nothing: give --precision tf32, fp32x3, bf16 or fp16");
  }
  return Status::ok();
}

// --inputs: each file's arrays, checked against the model's graph inputs (names, dtypes,
// static shapes) before anything is compiled, after check_precision_options.
Result<driver::PrecisionSamples> read_precision_inputs(const CompileOptions& options,
                                                       const ir::Graph& graph) {
  STITCH_RETURN_IF_ERROR(check_precision_options(options));
  driver::PrecisionSamples samples;
  if (options.precision_inputs.empty()) return samples;
  const std::vector<runtime::StepTensor> inputs = runtime::graph_input_tensors(graph);
  for (const std::string& path : options.precision_inputs) {
    STITCH_ASSIGN_OR_RETURN(runtime::NamedTensors arrays, runtime::read_npz(path));
    using Feeds = std::map<std::string, ir::Tensor>;
    STITCH_ASSIGN_OR_RETURN(Feeds bound, runtime::bind_feeds(inputs, std::move(arrays), path));
    samples.push_back({path, std::move(bound)});
  }
  return samples;
}

// The gates after OUT is written (exit 3): --precision's error within --max-rel-error
// (report.json "precision"), then --min-compression; then the summary line.
Status check_gates(const CompileOptions& options, const emit::Report& report,
                   int64_t fused_kernels) {
  const emit::ReportPrecision& precision = report.precision;
  if (!precision.passed()) {
    std::string worst;
    for (const emit::PrecisionOutput& output : precision.outputs) {
      if (output.nonfinite.value_or(0) > 0) {
        worst = "output " + support::quote_bounded(output.name) + " has " +
                std::to_string(*output.nonfinite) + " inf/NaN values where float32 has none";
        break;
      }
      if (output.max_rel_error.value_or(0) > precision.max_rel_error_gate) {
        char figure[96];
        std::snprintf(figure, sizeof(figure),
                      "%.3g of its largest value, above --max-rel-error %.3g",
                      *output.max_rel_error, precision.max_rel_error_gate);
        worst =
            "output " + support::quote_bounded(output.name) + " differs from float32 by " + figure;
        break;
      }
    }
    return Status::gate_failed(options.model_path + ": --precision " +
                               std::string(ir::precision_name(precision.mode)) + ": " + worst +
                               " (report.json \"precision\" has every output)");
  }
  const int64_t original_kernels = report.kernels.original;
  double compression =
      fused_kernels > 0 ? static_cast<double>(original_kernels) / static_cast<double>(fused_kernels)
                        : 0.0;
  if (options.min_compression > 0 && compression < options.min_compression) {
    char message[160];
    std::snprintf(message, sizeof(message),
                  ": compression %.2fx (%lld -> %lld kernels) is below --min-compression %.2f",
                  compression, static_cast<long long>(original_kernels),
                  static_cast<long long>(fused_kernels), options.min_compression);
    return Status::gate_failed(options.model_path + message);
  }
  if (options.verbosity != Verbosity::kQuiet) {
    std::fprintf(stderr, "stitchopt: %lld kernels -> %lld kernels (%.1fx); wrote %s\n",
                 static_cast<long long>(original_kernels), static_cast<long long>(fused_kernels),
                 compression, options.output_directory.c_str());
  }
  return Status::ok();
}

// The device profile the planner scores with: --device, the products of --precision
// (for the emulated timer too), the launch mode's phi (--launch-mode, then
// --launch-latency-us, checked like a loaded profile's).
Result<cost_model::DeviceProfile> planning_profile(const CompileOptions& options) {
  STITCH_ASSIGN_OR_RETURN(cost_model::DeviceProfile profile,
                          cost_model::resolve_device_profile(options.device));
  profile.products = options.schedule.precision;
  profile.launch_mode =
      cost_model::parse_launch_mode(options.launch_mode).value_or(cost_model::LaunchMode::kHost);
  if (options.launch_latency_us >= 0) {
    cost_model::set_launch_phi(&profile, options.launch_latency_us);
    STITCH_RETURN_IF_ERROR(cost_model::validate_device_profile(profile, "--launch-latency-us"));
  }
  return profile;
}

}  // namespace

Status run_compile(const CompileOptions& options) {
  // The CLI's own phases and, in between, the driver's, in the order they ran.
  std::vector<emit::PhaseTiming> phases;
  auto phase_done = [&](const emit::PhaseTiming& phase) { print_phase(options.verbosity, phase); };
  emit::PhaseTimer timer(phases, phase_done);
  STITCH_RETURN_IF_ERROR(check_model_file(options.model_path));
  // -o first: a directory stitchopt may not replace is a usage error, reported
  // before any work is done; so is a wrong --device.
  OutputDirectoryOptions output_options;
  output_options.force = options.force;
  output_options.protected_files = {options.model_path};
  output_options.protected_files.insert(output_options.protected_files.end(),
                                        options.precision_inputs.begin(),
                                        options.precision_inputs.end());
  // A --device profile file is an input too (a built-in name is no file).
  if (std::error_code ignored; !options.device.empty() && fs::exists(options.device, ignored)) {
    output_options.protected_files.push_back(options.device);
  }
  STITCH_RETURN_IF_ERROR(check_output_directory(options.output_directory, output_options));
  std::optional<cost_model::DeviceProfile> profile;
  if (options.fuse) {
    STITCH_ASSIGN_OR_RETURN(profile, planning_profile(options));
  }
  onnx_import::ImportOptions import_options;
  import_options.input_shapes = options.input_shapes;
  import_options.symbolic_dims = true;  // explained below, after propagation
  // Read once: the bytes feed both the importer and the report's sha256.
  std::string model_bytes;
  Result<ir::Model> imported = timer.time("import", [&]() -> Result<ir::Model> {
    // Read as a regular file only, whatever the path names by the time it is opened.
    STITCH_ASSIGN_OR_RETURN(
        model_bytes, support::read_regular_file(options.model_path, kMaxModelBytes, "model"));
    return onnx_import::import_model_bytes(model_bytes, options.model_path, import_options);
  });
  if (!imported.is_ok()) return imported.status();
  ir::Model& model = imported.value();

  Status verified = timer.time("verify", [&] { return ir::verify(model); });
  if (!verified.is_ok()) return verified.with_prefix(options.model_path + ": ");
  if (!model.graph.dim_symbols.empty()) {
    // Kernels are compiled for static shapes. The symbols went through shape
    // inference; simplification refines them further (a Reshape of a folded target,
    // a Shape of a static range). Then the error names the dims that decide the
    // shapes, with the values the model forces. A pass failing on the symbolic graph
    // only makes the explanation less precise.
    if (options.simplify) {
      ir::PipelineOptions pipeline = options.pipeline;
      pipeline.model_path = options.model_path;
      pipeline.dump_ir_after.clear();
      (void)ir::run_passes(model, pipeline);
    }
    return Status::invalid_input(options.model_path + ": " +
                                 ir::explain_symbolic_dims(model.graph));
  }

  STITCH_ASSIGN_OR_RETURN(driver::PrecisionSamples samples,
                          read_precision_inputs(options, model.graph));

  // The external data files are inputs too: --force never deletes them.
  for (ir::ValueId id = 0; id < model.graph.value_capacity(); ++id) {
    const std::shared_ptr<const ir::Tensor>& constant = model.graph.value(id).constant;
    if (constant != nullptr && constant->external) {
      output_options.protected_files.push_back(fs::path(options.model_path).parent_path() /
                                               constant->external->location);
    }
  }
  STITCH_ASSIGN_OR_RETURN(auto staged,
                          StagedOutputDirectory::create(options.output_directory, output_options));
  driver::CompileOptions compile_options;
  compile_options.model_path = options.model_path;
  compile_options.simplify = options.simplify;
  compile_options.pipeline = options.pipeline;
  compile_options.pipeline.model_path = options.model_path;
  if (!compile_options.pipeline.dump_ir_after.empty()) {
    compile_options.pipeline.dump_directory = (staged.path() / "ir").string();
    fs::create_directories(compile_options.pipeline.dump_directory);
  }
  compile_options.profile = profile;
  compile_options.planner = options.planner;
  compile_options.schedule = options.schedule;
  compile_options.max_rel_error = options.max_rel_error;
  compile_options.precision_inputs = std::move(samples);
  compile_options.reduced_io = options.reduced_io;
  std::unique_ptr<fusion::CandidateTimer> candidate_timer;
  if (options.fuse && options.score == "emulated") {
    candidate_timer = emulated_timer(options, *profile, staged.path() / "score");
    compile_options.planner.timer = candidate_timer.get();
  }
  compile_options.codegen = options.codegen;
  driver::CompileObserver observer;
  observer.phase_done = phase_done;
  observer.simplified = [&](const ir::SimplifyStatistics& statistics) {
    if (options.time_passes) print_pass_table(statistics);
  };
  observer.warning = [&](const std::string& warning) {
    if (options.verbosity != Verbosity::kQuiet) {
      std::fprintf(stderr, "stitchopt: warning: %s\n", support::printable(warning).c_str());
    }
  };
  STITCH_ASSIGN_OR_RETURN(driver::CompiledModel compiled,
                          driver::compile(std::move(model), compile_options, observer));
  STITCH_RETURN_IF_ERROR(check_static_types(compiled.simplified.graph, options.model_path));
  phases.insert(phases.end(), compiled.report.phases.begin(), compiled.report.phases.end());
  std::optional<emit::ReportPlan>& planned = compiled.report.plan;
  if (planned && options.codegen) {
    STITCH_RETURN_IF_ERROR(
        write_kernels(compiled, staged.path() / "kernels", options.ptxas, *profile, timer));
  }

  Status written = timer.time("write", [&]() -> Status {
    const fs::path model_file = staged.path() / "model.fused.onnx";
    STITCH_RETURN_IF_ERROR(emit::write_onnx(compiled.rewritten, model_file.string()));
    if (!options.codegen || !planned) return Status::ok();
    // kernels.json names the exact model it belongs to, so `stitchopt run` refuses a
    // model.fused.onnx swapped or edited afterwards.
    STITCH_ASSIGN_OR_RETURN(std::string written_bytes, read_file(model_file.string()));
    return emit::write_kernels_json(compiled.kernels_artifact(support::sha256_hex(written_bytes)),
                                    staged.path() / "kernels");
  });
  STITCH_RETURN_IF_ERROR(written);

  emit::Report& report = compiled.report;
  report.model.sha256 = support::sha256_hex(model_bytes);
  report.options.input_shapes = options.input_shapes;
  report.phases = phases;
  const ir::Graph& graph = compiled.simplified.graph;
  STITCH_RETURN_IF_ERROR(
      write_text(staged.path() / "report.json", emit::render_report(report, graph)));
  // The profile the plan was made for, whole (--launch-latency-us applied): what
  // `stitchopt profile OUT` estimates with, whether it was built in or a file.
  if (profile) {
    STITCH_RETURN_IF_ERROR(
        write_text(staged.path() / "device.json", cost_model::device_profile_json(*profile)));
  }
  if (planned) {
    fs::path dot = staged.path() / "plan.dot";
    STITCH_RETURN_IF_ERROR(
        write_text(dot, emit::render_plan_dot(graph, planned->result, planned->kernel_names)));
    render_svg(dot, graph.num_nodes(), options.verbosity);
  }
  STITCH_RETURN_IF_ERROR(staged.commit());

  return check_gates(options, report,
                     planned ? planned->result.kernels_fused : report.kernels.after_simplify);
}

}  // namespace stitch::cli
