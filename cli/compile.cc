// The compile command: stitchopt MODEL -o OUT.
#include "cli/compile.h"

#include <chrono>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/output_dir.h"
#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "emit/fused_model.h"
#include "emit/kernel_directory.h"
#include "emit/ptxas_stats.h"
#include "emit/onnx_writer.h"
#include "emit/plan_dot.h"
#include "emit/report.h"
#include "support/sha256.h"
#include "ir/core/verifier.h"
#include "onnx_import/importer.h"
#include "support/escape.h"
#include "support/subprocess.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

// Times phases and prints "phase: 0.123 s" lines in verbose mode.
class PhaseTimer {
 public:
  explicit PhaseTimer(Verbosity verbosity) : verbosity_(verbosity) {}

  template <typename Function>
  auto time(const std::string& name, Function&& function) {
    auto start = std::chrono::steady_clock::now();
    auto result = function();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    phases_.push_back(emit::PhaseTiming{name, seconds});
    if (verbosity_ == Verbosity::kVerbose) {
      std::fprintf(stderr, "stitchopt: %-8s %8.3f s\n", name.c_str(), seconds);
    }
    return result;
  }
  const std::vector<emit::PhaseTiming>& phases() const { return phases_; }

 private:
  Verbosity verbosity_;
  std::vector<emit::PhaseTiming> phases_;
};

// The architecture --ptxas compiles for: the profile's GPU generation.
std::string ptxas_arch(const cost_model::DeviceProfile& profile) {
  if (profile.name.rfind("v100", 0) == 0) return "sm_70";
  if (profile.name.rfind("a100", 0) == 0) return "sm_80";
  return "sm_90";  // h100, h200 and calibrated profiles of recent GPUs
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

// The fused node's attributes of a group: `kernel` is its (shared) kernel name and
// `codegen` that kernel's generated code, when it has some.
std::vector<ir::Attribute> group_attributes(const ir::Graph& graph, const fusion::PlannedGroup& group,
                                            const std::string& kernel,
                                            const emit::EmittedKernel* codegen) {
  std::vector<std::string> node_names;
  for (ir::NodeId id : group.nodes) node_names.push_back(graph.node(id).name);
  std::vector<ir::Attribute> attributes = {ir::Attribute::make_string("kernel", kernel),
                                           ir::Attribute::make_string("category", group.category)};
  if (group.category == "library") {
    STITCH_CHECK(group.epilogue.has_value()) << "library group without its epilogue";
    for (ir::Attribute& attribute : fusion::epilogue_attributes(*group.epilogue)) {
      attributes.push_back(std::move(attribute));
    }
  }
  if (codegen != nullptr) {
    attributes.push_back(ir::Attribute::make_string("source", "kernels/" + codegen->file));
    attributes.push_back(ir::Attribute::make_int("grid", codegen->launch.grid));
    attributes.push_back(ir::Attribute::make_int("block", codegen->launch.block));
    attributes.push_back(ir::Attribute::make_string("composition", codegen->composition));
    attributes.push_back(ir::Attribute::make_string("template", codegen->template_text));
  }
  attributes.push_back(
      ir::Attribute::make_float("predicted_time_us", static_cast<float>(group.predicted_time_us)));
  attributes.push_back(ir::Attribute::make_int("shared_memory_bytes", group.shared_memory_bytes));
  attributes.push_back(ir::Attribute::make_strings("fused_nodes", std::move(node_names)));
  return attributes;
}

// --device: a built-in profile name ("h100") or the path of a profile .json.
Result<cost_model::DeviceProfile> load_profile(const std::string& device) {
  if (device.size() > 5 && device.ends_with(".json")) return cost_model::load_device_profile(device);
  Result<cost_model::DeviceProfile> builtin = cost_model::builtin_device_profile(device);
  if (builtin.is_ok()) return builtin;
  std::string names;
  for (const std::string& name : cost_model::builtin_device_profile_names()) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return Status::invalid_input("--device " + device + ": no such device profile; use one of " +
                               names + " or the path of a profile .json");
}

}  // namespace

Status run_compile(const CompileOptions& options) {
  PhaseTimer timer(options.verbosity);
  if (!fs::is_regular_file(options.model_path)) {
    return Status::invalid_input(options.model_path +
                                 ": no such model file; pass the path of a .onnx file");
  }
  // -o first: a directory stitchopt may not replace is a usage error, reported
  // before any work is done; so is a wrong --device.
  OutputDirectoryOptions output_options;
  output_options.force = options.force;
  output_options.protected_files = {options.model_path};
  STITCH_RETURN_IF_ERROR(check_output_directory(options.output_directory, output_options));
  std::optional<cost_model::DeviceProfile> profile;
  if (options.fuse) {
    STITCH_ASSIGN_OR_RETURN(profile, load_profile(options.device));
    if (options.launch_latency_us >= 0) profile->launch_latency_us = options.launch_latency_us;
  }
  onnx_import::ImportOptions import_options;
  import_options.input_shapes = options.input_shapes;
  // Read once: the bytes feed both the importer and the report's sha256.
  std::string model_bytes;
  Result<ir::Model> imported = timer.time("import", [&]() -> Result<ir::Model> {
    STITCH_ASSIGN_OR_RETURN(model_bytes, read_file(options.model_path));
    return onnx_import::import_model_bytes(model_bytes, options.model_path, import_options);
  });
  if (!imported.is_ok()) return imported.status();
  ir::Model& model = imported.value();

  Status verified = timer.time("verify", [&] { return ir::verify(model); });
  if (!verified.is_ok()) return verified.with_prefix(options.model_path + ": ");
  int64_t original_kernels = emit::count_original_kernels(model.graph);
  int64_t original_nodes = model.graph.num_nodes();

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
  std::optional<ir::SimplifyStatistics> simplified;
  if (options.simplify) {
    ir::PipelineOptions pipeline = options.pipeline;
    pipeline.model_path = options.model_path;
    if (!pipeline.dump_ir_after.empty()) {
      pipeline.dump_directory = (staged.path() / "ir").string();
      fs::create_directories(pipeline.dump_directory);
    }
    Result<ir::SimplifyStatistics> statistics =
        timer.time("simplify", [&] { return ir::run_passes(model, pipeline); });
    if (!statistics.is_ok()) return statistics.status();
    simplified = std::move(statistics).value();
    // A pass that breaks an invariant is our bug, whatever the model.
    Status still_valid = ir::verify(model);
    if (!still_valid.is_ok()) {
      return Status::internal("the IR is invalid after simplification: " +
                              still_valid.message());
    }
    if (options.time_passes) print_pass_table(*simplified);
  }

  std::optional<emit::ReportPlan> planned;
  std::vector<emit::EmittedKernel> distinct_kernels;  // each written once to OUT/kernels/
  ir::Model fused_model;
  emit::ReportDevice device;
  if (profile.has_value()) {
    device = emit::ReportDevice{profile->name, profile->source, profile->launch_latency_us};
    Result<fusion::PlannerResult> result = timer.time(
        "plan", [&] { return fusion::plan_fusion(model.graph, *profile, options.planner); });
    if (!result.is_ok()) return result.status().with_prefix(options.model_path + ": ");
    // Identical groups share one kernel (emit/fused_model.h); the sharing is decided
    // first so that codegen emits each distinct kernel once, under its final name.
    std::vector<emit::FusedGroup> groups;
    for (size_t index = 0; index < result->groups.size(); ++index) {
      const std::string kernel = "stitch_k" + std::to_string(index);
      groups.push_back(emit::FusedGroup{result->groups[index].nodes, kernel,
                                        group_attributes(model.graph, result->groups[index], kernel,
                                                         nullptr)});
    }
    // Codegen: one kernel per distinct group that is not a library call (a
    // group the emitter cannot express gets a warning and no kernel), and a single-op
    // kernel per unfused node that launches a generated kernel.
    std::vector<std::optional<emit::ReportCodegen>> group_codegen(result->groups.size());
    std::vector<std::optional<emit::ReportCodegen>> unfused_codegen(result->unfused.size());
    std::optional<emit::KernelSharing> sharing;
    if (options.codegen) {
      Status generated = timer.time("codegen", [&]() -> Status {
        STITCH_ASSIGN_OR_RETURN(sharing, emit::share_kernels(model, groups));
        for (size_t index = 0; index < result->groups.size(); ++index) {
          const fusion::PlannedGroup& group = result->groups[index];
          if (group.category == "library") continue;
          if (size_t owner = sharing->owner[index]; owner != index) {
            group_codegen[index] = group_codegen[owner];
            continue;
          }
          Result<emit::EmittedKernel> kernel = emit::emit_kernel(
              model.graph, sharing->boundaries[index], sharing->kernel_names[index], *profile);
          if (!kernel.is_ok()) {
            // The plan and the rewritten model stay valid (the group's function body
            // still runs in ONNX Runtime); the report's codegen is null. Compound
            // ops kept by --no-simplify are the usual cause.
            if (options.verbosity != Verbosity::kQuiet) {
              std::fprintf(stderr, "stitchopt: warning: no kernel for group %zu: %s\n", index,
                           support::printable(kernel.status().message()).c_str());
            }
            continue;
          }
          distinct_kernels.push_back(kernel.value());
          group_codegen[index] = emit::ReportCodegen{std::move(kernel).value(), std::nullopt};
        }
        STITCH_ASSIGN_OR_RETURN(std::vector<int32_t> positions,
                                emit::topological_positions(model.graph));
        int single = 0;
        for (size_t index = 0; index < result->unfused.size(); ++index) {
          const fusion::UnfusedNode& node = result->unfused[index];
          if (node.kind != "kernel") continue;
          // Ops without an index function (pooling, RNNs, Resize...) run as library
          // calls or on the reference path; the report leaves their codegen null.
          Result<emit::EmittedKernel> kernel =
              emit::emit_kernel(model.graph, emit::group_boundary(model.graph, {node.node}, positions),
                                "stitch_s" + std::to_string(single), *profile);
          if (!kernel.is_ok()) continue;
          ++single;
          distinct_kernels.push_back(kernel.value());
          unfused_codegen[index] = emit::ReportCodegen{std::move(kernel).value(), std::nullopt};
        }
        return Status::ok();
      });
      STITCH_RETURN_IF_ERROR(generated);
    }

    Result<emit::FusedModel> fused = timer.time("rewrite", [&]() -> Result<emit::FusedModel> {
      if (!sharing) {
        STITCH_ASSIGN_OR_RETURN(sharing, emit::share_kernels(model, groups));
      }
      for (size_t index = 0; index < groups.size(); ++index) {
        const std::optional<emit::ReportCodegen>& codegen = group_codegen[index];
        groups[index].attributes =
            group_attributes(model.graph, result->groups[index], sharing->kernel_names[index],
                             codegen ? &codegen->kernel : nullptr);
      }
      return emit::build_fused_model(model, groups, *sharing);
    });
    if (!fused.is_ok()) return fused.status();

    if (options.codegen) {
      fs::path kernels = staged.path() / "kernels";
      STITCH_RETURN_IF_ERROR(timer.time(
          "kernels", [&] { return emit::write_kernel_directory(distinct_kernels, kernels); }));
      if (options.ptxas) {
        std::optional<fs::path> nvcc = emit::find_nvcc();
        if (!nvcc) {
          return Status::invalid_input(
              "--ptxas needs nvcc (set CUDACXX or install the CUDA toolkit); none was found");
        }
        const std::string arch = ptxas_arch(*profile);
        Status compiled = timer.time("ptxas", [&]() -> Status {
          std::map<std::string, emit::PtxasStats> by_kernel;
          for (const emit::EmittedKernel& kernel : distinct_kernels) {
            STITCH_ASSIGN_OR_RETURN(std::vector<emit::PtxasStats> functions,
                                    emit::run_ptxas(*nvcc, kernels / kernel.file, {kernels}, arch));
            by_kernel[kernel.name] = emit::summarize_ptxas(functions);
          }
          for (auto* list : {&group_codegen, &unfused_codegen}) {
            for (std::optional<emit::ReportCodegen>& codegen : *list) {
              if (codegen) codegen->ptxas = by_kernel.at(codegen->kernel.name);
            }
          }
          return Status::ok();
        });
        STITCH_RETURN_IF_ERROR(compiled);
      }
    }
    planned = emit::ReportPlan{std::move(result).value(), fused->kernel_names, fused->distinct_kernels,
                               std::move(group_codegen), std::move(unfused_codegen)};
    fused_model = std::move(fused->model);
  }
  // The "stitchopt.kernels" metadata tells `stitchopt run` that OUT/kernels/kernels.json
  // must exist; keys of ours in the input model never pass through.
  ir::Model& output_model = planned ? fused_model : model;
  std::erase_if(output_model.metadata_props,
                [](const auto& entry) { return entry.first.rfind("stitchopt.", 0) == 0; });
  if (options.codegen && planned) {
    output_model.metadata_props.emplace_back("stitchopt.kernels", "kernels/kernels.json");
  }

  Status written = timer.time("write", [&]() -> Status {
    const fs::path model_file = staged.path() / "model.fused.onnx";
    STITCH_RETURN_IF_ERROR(emit::write_onnx(output_model, model_file.string()));
    if (!options.codegen || !planned) return Status::ok();
    // kernels.json names the exact model it belongs to, so `stitchopt run` refuses a
    // model.fused.onnx swapped or edited afterwards.
    STITCH_ASSIGN_OR_RETURN(std::string written_bytes, read_file(model_file.string()));
    return emit::write_kernels_json(distinct_kernels, staged.path() / "kernels",
                                    support::sha256_hex(written_bytes));
  });
  STITCH_RETURN_IF_ERROR(written);

  emit::Report report;
  report.model = emit::ReportModel{options.model_path, support::sha256_hex(model_bytes),
                                   model.default_opset(), original_nodes};
  report.device = device;
  report.options.input_shapes = options.input_shapes;
  report.options.planner = options.planner;
  report.phases = timer.phases();
  report.simplify = simplified;
  report.kernels.original = original_kernels;
  report.kernels.after_simplify = emit::count_original_kernels(model.graph);
  report.plan = planned;
  STITCH_RETURN_IF_ERROR(
      write_text(staged.path() / "report.json", emit::render_report(report, model.graph)));
  if (planned) {
    fs::path dot = staged.path() / "plan.dot";
    STITCH_RETURN_IF_ERROR(write_text(
        dot, emit::render_plan_dot(model.graph, planned->result, planned->kernel_names)));
    render_svg(dot, model.graph.num_nodes(), options.verbosity);
  }
  STITCH_RETURN_IF_ERROR(staged.commit());

  int64_t fused_kernels = planned ? planned->result.kernels_fused : report.kernels.after_simplify;
  double compression = fused_kernels > 0 ? static_cast<double>(original_kernels) /
                                               static_cast<double>(fused_kernels)
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

}  // namespace stitch::cli
