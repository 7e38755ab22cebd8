// The compile driver: simplify, plan, codegen and rewrite an imported model.
#include "driver/compile.h"

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "artifact/fused_node_attributes.h"
#include "driver/precision_check.h"
#include "emit/canonical_group.h"
#include "emit/fused_model.h"
#include "emit/group_boundary.h"
#include "emit/kernel_name.h"
#include "emit/schedule.h"
#include "ir/core/verifier.h"

namespace stitch::driver {
namespace {

Status simplify(ir::Model& model, const CompileOptions& options, const CompileObserver& observer,
                emit::PhaseTimer& timer, emit::Report& report) {
  Result<ir::SimplifyStatistics> statistics =
      timer.time("simplify", [&] { return ir::run_passes(model, options.pipeline); });
  if (!statistics.is_ok()) return statistics.status();
  report.simplify = std::move(statistics).value();
  // A pass that breaks an invariant is our bug, whatever the model.
  Status still_valid = ir::verify(model);
  if (!still_valid.is_ok()) {
    return Status::internal("the IR is invalid after simplification: " + still_valid.message());
  }
  if (observer.simplified) observer.simplified(*report.simplify);
  return Status::ok();
}

// The plan's groups as the rewrite takes them, without attributes yet: a group's
// kernel is named after its position, then described by share_kernels (identical
// groups share the first's name; the fused node keeps `stitch_k<N>_<group>`).
std::vector<emit::FusedGroup> fused_groups(const fusion::PlannerResult& plan) {
  std::vector<emit::FusedGroup> groups;
  for (size_t index = 0; index < plan.groups.size(); ++index) {
    groups.push_back(
        emit::FusedGroup{plan.groups[index].nodes, "stitch_k" + std::to_string(index), {}});
  }
  return groups;
}

// Phase 3: the kernels of the distinct groups and of the unfused nodes that launch a
// generated kernel, into `kernels` and the report's codegen. Unfused nodes with the
// same canonical text (emit/canonical_group.h) launch one kernel, as identical groups
// do: an unrolled RNN's hundreds of identical steps compile a handful of kernels.
Status generate_kernels(const ir::Model& model, const cost_model::DeviceProfile& profile,
                        const emit::KernelSharing& sharing, const emit::ScheduleOptions& options,
                        const CompileObserver& observer, std::vector<emit::EmittedKernel>& kernels,
                        std::vector<emit::KernelPrediction>& predictions, emit::ReportPlan& plan) {
  const ir::Graph& graph = model.graph;
  const fusion::PlannerResult& result = plan.result;
  // kernels index -> the other call sites of that kernel, for its header.
  std::unordered_map<size_t, std::vector<std::string>> call_sites;
  std::unordered_map<size_t, size_t> kernel_of_group;  // owner group -> kernels index
  for (size_t index = 0; index < result.groups.size(); ++index) {
    if (result.groups[index].category == artifact::GroupCategory::kLibrary) continue;
    if (size_t owner = sharing.owner[index]; owner != index) {
      plan.group_codegen[index] = plan.group_codegen[owner];
      if (auto kernel = kernel_of_group.find(owner); kernel != kernel_of_group.end()) {
        const std::vector<ir::NodeId>& nodes = result.groups[index].nodes;
        std::string site = "group " + std::to_string(index) + ": " + graph.node(nodes.front()).name;
        if (nodes.size() > 1) {
          site += " .. " + graph.node(nodes.back()).name + " (" + std::to_string(nodes.size()) +
                  " nodes)";
        }
        call_sites[kernel->second].push_back(std::move(site));
      }
      continue;
    }
    Result<emit::EmittedKernel> kernel = emit::emit_kernel(
        graph, sharing.boundaries[index], sharing.kernel_names[index], profile, options);
    if (!kernel.is_ok()) {
      // The plan and the rewritten model stay valid (the group's function body still
      // runs in ONNX Runtime); the report's codegen is null. Compound ops kept by
      // --no-simplify are the usual cause.
      if (observer.warning) {
        observer.warning("no kernel for group " + std::to_string(index) + ": " +
                         kernel.status().message());
      }
      continue;
    }
    const emit::KernelPrediction prediction =
        emit::predict_kernel(graph, result.groups[index].nodes, *kernel, profile);
    auto emitted = std::make_shared<const emit::EmittedKernel>(std::move(kernel).value());
    kernel_of_group[index] = kernels.size();
    kernels.push_back(*emitted);
    predictions.push_back(prediction);
    plan.group_codegen[index] = emit::ReportCodegen{std::move(emitted), std::nullopt};
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<int32_t> positions, emit::topological_positions(graph));
  // Unfused nodes by canonical text first, so that a shared kernel's name describes
  // every node that launches it.
  std::vector<std::string> texts(result.unfused.size());
  std::vector<emit::GroupBoundary> boundaries(result.unfused.size());
  std::unordered_map<std::string, std::vector<std::vector<ir::NodeId>>> sites_by_text;
  for (size_t index = 0; index < result.unfused.size(); ++index) {
    const fusion::UnfusedNode& node = result.unfused[index];
    if (node.kind != fusion::UnfusedKind::kKernel) continue;
    boundaries[index] = emit::group_boundary(graph, {node.node}, positions);
    texts[index] = emit::canonical_group_text(model, boundaries[index]);
    sites_by_text[texts[index]].push_back({node.node});
  }
  int single = 0;
  struct SingleKernel {
    size_t index;                                        // in kernels
    std::shared_ptr<const emit::EmittedKernel> emitted;  // the report's record of it
  };
  std::unordered_map<std::string, SingleKernel> single_by_text;  // by canonical text
  for (size_t index = 0; index < result.unfused.size(); ++index) {
    const fusion::UnfusedNode& node = result.unfused[index];
    if (node.kind != fusion::UnfusedKind::kKernel) continue;
    const emit::GroupBoundary& boundary = boundaries[index];
    const std::string& text = texts[index];
    if (auto owner = single_by_text.find(text); owner != single_by_text.end()) {
      emit::SharedLaunch launch{graph.node(node.node).name, {}};
      for (ir::ValueId output : boundary.outputs)
        launch.outputs.push_back(graph.value(output).name);
      kernels[owner->second.index].shared_by.push_back(std::move(launch));
      // The report shows the shared kernel's code under each node that launches it.
      plan.unfused_codegen[index] = emit::ReportCodegen{owner->second.emitted, std::nullopt};
      continue;
    }
    // Ops without an index function (pooling, RNNs, Resize...) run as library calls
    // or on the reference path; the report leaves their codegen null.
    Result<emit::EmittedKernel> kernel =
        emit::emit_kernel(graph, boundary,
                          "stitch_s" + std::to_string(single) + "_" +
                              emit::kernel_description(graph, sites_by_text.at(text)),
                          profile, options);
    if (!kernel.is_ok()) continue;
    ++single;
    const emit::KernelPrediction prediction =
        emit::predict_kernel(graph, {node.node}, *kernel, profile);
    auto emitted = std::make_shared<const emit::EmittedKernel>(std::move(kernel).value());
    single_by_text.emplace(text, SingleKernel{kernels.size(), emitted});
    kernels.push_back(*emitted);
    predictions.push_back(prediction);
    plan.unfused_codegen[index] = emit::ReportCodegen{std::move(emitted), std::nullopt};
  }
  for (auto& [index, sites] : call_sites) emit::list_call_sites(kernels[index], sites);
  for (emit::EmittedKernel& kernel : kernels) {
    std::vector<std::string> sites;
    for (const emit::SharedLaunch& launch : kernel.shared_by) sites.push_back(launch.node);
    emit::list_call_sites(kernel, sites);
  }
  return Status::ok();
}

// The fused node's attributes of a group: `kernel` is its (shared) kernel name and
// `codegen` that kernel's generated code, when it has some.
artifact::FusedNodeAttributes fused_node_attributes(
    const ir::Graph& graph, const fusion::PlannedGroup& group, const std::string& kernel,
    const std::optional<emit::ReportCodegen>& codegen) {
  artifact::FusedNodeAttributes attributes;
  attributes.kernel = kernel;
  attributes.category = group.category;
  if (group.category == artifact::GroupCategory::kLibrary) {
    STITCH_CHECK(group.epilogue.has_value()) << "library group without its epilogue";
    attributes.epilogue = group.epilogue;
  }
  if (codegen) {
    const emit::EmittedKernel& emitted = *codegen->kernel;
    attributes.codegen = artifact::FusedNodeAttributes::Codegen{
        "kernels/" + emitted.file, emitted.launch.grid, emitted.launch.block, emitted.composition,
        emitted.template_text};
  }
  attributes.predicted_time_us = static_cast<float>(group.predicted_time_us);
  attributes.shared_memory_bytes = group.shared_memory_bytes;
  for (ir::NodeId id : group.nodes) attributes.fused_nodes.push_back(graph.node(id).name);
  return attributes;
}

// Phases 2 to 4 on the simplified model.
Status fuse(const ir::Model& model, const CompileOptions& options, const CompileObserver& observer,
            emit::PhaseTimer& timer, CompiledModel& compiled) {
  Result<fusion::PlannerResult> planned =
      timer.time("plan", [&]() -> Result<fusion::PlannerResult> {
        fusion::PlannerOptions planner = options.planner;
        if (!planner.kernel_shape) {
          planner.kernel_shape = emit::kernel_shape_oracle(*options.profile, options.schedule);
        }
        Result<fusion::PlannerResult> result =
            fusion::plan_fusion(model.graph, *options.profile, planner);
        if (!result.is_ok()) return result.status().with_prefix(options.model_path + ": ");
        return result;
      });
  if (!planned.is_ok()) return planned.status();
  STITCH_ASSIGN_OR_RETURN(EmittedPlan emitted,
                          emit_plan(model, std::move(planned).value(), *options.profile,
                                    options.codegen, observer, &timer, options.schedule));
  compiled.report.plan = std::move(emitted.plan);
  compiled.kernels = std::move(emitted.kernels);
  compiled.predictions = std::move(emitted.predictions);
  compiled.rewritten = std::move(emitted.rewritten);
  return Status::ok();
}

}  // namespace

Result<EmittedPlan> emit_plan(const ir::Model& model, fusion::PlannerResult planned,
                              const cost_model::DeviceProfile& profile, bool codegen,
                              const CompileObserver& observer, emit::PhaseTimer* timer,
                              const emit::ScheduleOptions& schedule) {
  std::vector<emit::FusedGroup> groups = fused_groups(planned);
  STITCH_ASSIGN_OR_RETURN(emit::KernelSharing sharing,
                          emit::share_kernels(model, groups, /*describe=*/true));
  const size_t num_groups = planned.groups.size();
  const size_t num_unfused = planned.unfused.size();
  EmittedPlan emitted{
      emit::ReportPlan{std::move(planned), sharing.kernel_names, sharing.distinct_kernels, {}, {}},
      {},
      {},
      {}};
  emit::ReportPlan& plan = emitted.plan;
  plan.group_codegen.resize(num_groups);
  plan.unfused_codegen.resize(num_unfused);
  auto timed = [&](const char* phase, auto&& work) -> Status {
    return timer != nullptr ? timer->time(phase, work) : work();
  };
  if (codegen) {
    STITCH_RETURN_IF_ERROR(timed("codegen", [&] {
      return generate_kernels(model, profile, sharing, schedule, observer, emitted.kernels,
                              emitted.predictions, plan);
    }));
  }
  std::optional<emit::FusedModel> fused;
  STITCH_RETURN_IF_ERROR(timed("rewrite", [&]() -> Status {
    for (size_t index = 0; index < groups.size(); ++index) {
      groups[index].attributes =
          fused_node_attributes(model.graph, plan.result.groups[index], sharing.kernel_names[index],
                                plan.group_codegen[index])
              .to_attributes();
    }
    STITCH_ASSIGN_OR_RETURN(fused, emit::build_fused_model(model, groups, sharing));
    return Status::ok();
  }));
  emitted.rewritten = std::move(fused->model);
  return emitted;
}

Result<CompiledModel> compile(ir::Model model, const CompileOptions& given,
                              const CompileObserver& observer) {
  // The estimates are made for the products the kernels compute (DeviceProfile::products).
  CompileOptions options = given;
  if (options.profile) options.profile->products = options.schedule.precision;
  CompiledModel compiled;
  emit::Report& report = compiled.report;
  emit::PhaseTimer timer(report.phases, observer.phase_done);
  report.model.path = options.model_path;
  report.model.node_count = model.graph.num_nodes();
  report.options.planner = options.planner;
  report.options.stencil_tiles = options.schedule.stencil_tiles;
  report.options.precision = options.schedule.precision;
  report.kernels.original = emit::count_original_kernels(model.graph);
  report.kernels.host_shape_ops = emit::count_host_shape_ops(model.graph);
  if (options.simplify) {
    STITCH_RETURN_IF_ERROR(simplify(model, options, observer, timer, report));
  }
  report.model.opset = model.default_opset();
  report.kernels.after_simplify = emit::count_original_kernels(model.graph);
  // bf16/fp16: the simplified model rewritten to the reduced type, before planning (the
  // plan counts its bytes); `lowered` keeps the float32 outputs for the error check.
  const ir::Precision precision = options.schedule.precision;
  std::optional<LoweredPrecision> lowered;
  if (ir::reduces_storage(precision)) {
    STITCH_ASSIGN_OR_RETURN(lowered, timer.time("reduce_precision", [&] {
      return lower_precision(model, precision, options.precision_inputs, options.reduced_io);
    }));
  }
  if (options.profile) {
    const cost_model::DeviceProfile& profile = *options.profile;
    report.device =
        emit::ReportDevice{profile.name,
                           profile.source,
                           std::string(cost_model::launch_mode_name(profile.launch_mode)),
                           cost_model::launch_phi(profile),
                           profile.calibration.graph_launch_latency_us,
                           profile.launch_latency_us};
    STITCH_RETURN_IF_ERROR(fuse(model, options, observer, timer, compiled));
  } else {
    compiled.rewritten = model;
  }
  // The "stitchopt.kernels" metadata tells `stitchopt run` that OUT/kernels/kernels.json
  // must exist; keys of ours in the input model never pass through.
  std::erase_if(compiled.rewritten.metadata_props,
                [](const auto& entry) { return entry.first.rfind("stitchopt.", 0) == 0; });
  if (options.codegen && report.plan) {
    compiled.rewritten.metadata_props.emplace_back("stitchopt.kernels", "kernels/kernels.json");
  }
  // The runtime computes library calls at the precision the kernels were made for
  // (artifact/reader/output_directory.h); fp32 outputs stay byte-identical to before.
  if (precision != ir::Precision::kFloat32) {
    compiled.rewritten.metadata_props.emplace_back("stitchopt.precision",
                                                   std::string(ir::precision_name(precision)));
  }
  auto check = [&]() {
    return check_precision(model, precision, options.max_rel_error, options.precision_inputs,
                           lowered ? &*lowered : nullptr);
  };
  STITCH_ASSIGN_OR_RETURN(report.precision, precision == ir::Precision::kFloat32
                                                ? check()
                                                : timer.time("precision", check));
  compiled.simplified = std::move(model);
  return compiled;
}

}  // namespace stitch::driver
