// The fusion report, out/report.json.
#include "emit/report.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "artifact/json_text.h"
#include "cost_model/cost_model.h"

namespace stitch::emit {

namespace {

// An integer tensor of at most kMaxShapeTensorElements elements with a known size.
bool shape_tensor(const ir::Graph& graph, ir::ValueId id) {
  const ir::TensorType& type = graph.value(id).type;
  if (!type.is_static() || (type.dtype != ir::DType::kInt64 && type.dtype != ir::DType::kInt32)) {
    return false;
  }
  int64_t elements = 1;
  for (int64_t dim : type.dims) elements *= dim;
  return elements <= kMaxShapeTensorElements;
}

}  // namespace

bool is_host_shape_op(const ir::Graph& graph, const ir::Node& node) {
  if (node.op_type == "Shape" || node.op_type == "Size") return node.domain.empty();
  if (node.outputs.empty() || node.inputs.empty()) return false;
  for (ir::ValueId output : node.outputs) {
    if (output == ir::kNoId || !shape_tensor(graph, output)) return false;
  }
  for (ir::ValueId input : node.inputs) {
    if (input != ir::kNoId && !shape_tensor(graph, input)) return false;
  }
  return true;
}

int64_t count_original_kernels(const ir::Graph& graph) {
  int64_t count = 0;
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    if (cost_model::launches_work(node) && !is_host_shape_op(graph, node)) ++count;
  }
  return count;
}

int64_t count_host_shape_ops(const ir::Graph& graph) {
  int64_t count = 0;
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    if (cost_model::launches_work(node) && is_host_shape_op(graph, node)) ++count;
  }
  return count;
}

namespace {

nlohmann::ordered_json node_json(const ir::Graph& graph, ir::NodeId id) {
  const ir::Node& node = graph.node(id);
  return {{"name", node.name}, {"op", node.op_type}, {"origin", node.origin}};
}

// groups[].timing / scoring.rejected[] (docs/report-schema.md); null when untimed.
nlohmann::ordered_json timing_json(const std::optional<fusion::CandidateTiming>& timing) {
  if (!timing) return nullptr;
  return {{"method", timing->method},           {"fused_us", timing->fused_us},
          {"unfused_us", timing->unfused_us},   {"saved_us", timing->saved_us()},
          {"composition", timing->composition}, {"bound", timing->bound}};
}

// groups[].codegen / unfused[].codegen (docs/report-schema.md); null when absent.
nlohmann::ordered_json codegen_json(const std::vector<std::optional<ReportCodegen>>& codegen,
                                    size_t index) {
  if (index >= codegen.size() || !codegen[index].has_value()) return nullptr;
  const EmittedKernel& kernel = *codegen[index]->kernel;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpSchedule& op : kernel.ops) {
    ops.push_back({{"name", op.node_name},
                   {"op", op.op_type},
                   {"composition", op.composition},
                   {"template", op.template_entry}});
  }
  nlohmann::ordered_json ptxas = nullptr;
  if (const std::optional<PtxasStats>& stats = codegen[index]->ptxas; stats.has_value()) {
    ptxas = {{"arch", stats->arch},
             {"registers", stats->registers},
             {"spill_store_bytes", stats->spill_store_bytes},
             {"spill_load_bytes", stats->spill_load_bytes},
             {"shared_bytes", stats->shared_bytes}};
  }
  return {{"kernel", kernel.name},
          {"file", "kernels/" + kernel.file},
          {"composition", kernel.composition},
          {"why", kernel.why},
          {"template", kernel.template_text},
          {"launch",
           {{"grid", kernel.launch.grid},
            {"block", kernel.launch.block},
            {"shared_bytes", kernel.launch.shared_bytes},
            {"cooperative", kernel.launch.cooperative}}},
          {"workspace_bytes", kernel.workspace_bytes},
          {"shared_memory",
           {{"requested", kernel.shared_bytes_requested},
            {"allocated", kernel.shared_bytes_allocated},
            {"fallback", kernel.shared_memory_fallback}}},
          {"ptxas", ptxas},
          {"ops", ops}};
}

// report.json "options": the planner's and the schedule's options.
nlohmann::ordered_json options_json(const ReportOptions& options) {
  using nlohmann::ordered_json;
  ordered_json input_shapes = ordered_json::object();
  for (const auto& [name, dims] : options.input_shapes) input_shapes[name] = dims;
  const fusion::PlannerOptions& planner = options.planner;
  return {{"input_shapes", input_shapes},
          {"exploratory", planner.candidates.exploratory},
          {"packing", planner.candidates.packing},
          {"epilogue", planner.candidates.epilogue},
          {"attention", planner.candidates.attention},
          {"stencils", planner.partition.stencils},
          {"stencil_tiles", options.stencil_tiles},
          {"precision", ir::precision_name(options.precision)},
          {"max_operands", planner.candidates.max_operands},
          {"max_pattern_size", planner.candidates.max_pattern_size},
          {"max_patterns_per_seed", planner.candidates.max_patterns_per_seed},
          {"candidate_time_limit_s", planner.candidates.time_limit_s},
          {"solver_time_limit_s", planner.plan.time_limit_s},
          {"large_gemm_flops", planner.partition.large_gemm_flops},
          {"max_reductions_per_kernel", planner.score.max_reductions_per_kernel}};
}

nlohmann::ordered_json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

nlohmann::ordered_json precision_json(const ReportPrecision& precision) {
  using nlohmann::ordered_json;
  ordered_json outputs = ordered_json::array();
  for (const PrecisionOutput& output : precision.outputs) {
    outputs.push_back(
        {{"name", output.name},
         {"max_abs_error", optional_json(output.max_abs_error)},
         {"max_rel_error", optional_json(output.max_rel_error)},
         {"cosine", optional_json(output.cosine)},
         {"nonfinite", output.nonfinite ? ordered_json(*output.nonfinite) : ordered_json()}});
  }
  ordered_json kept = ordered_json::array();
  for (const KeptFloat32& entry : precision.kept) {
    kept.push_back({{"values", entry.values}, {"why", entry.why}});
  }
  ordered_json clamped = ordered_json::array();
  for (const ClampedMaskEntry& entry : precision.clamped_masks) {
    clamped.push_back({{"value", entry.value},
                       {"lowest", entry.lowest},
                       {"clamped_to", entry.clamped_to},
                       {"readers", entry.readers}});
  }
  return {{"mode", ir::precision_name(precision.mode)},
          {"products", precision.products},
          {"measured", precision.measured},
          {"inputs", precision.inputs},
          {"max_rel_error_gate", precision.max_rel_error_gate},
          {"passed", precision.passed()},
          {"outputs", outputs},
          {"kept_float32", kept},
          {"clamped_masks", clamped}};
}

}  // namespace

std::string render_report(const Report& report, const ir::Graph& graph) {
  using nlohmann::ordered_json;
  ordered_json json;
  json["schema"] = kReportSchema;
  json["tool"] = {{"name", "stitchopt"}, {"version", STITCH_VERSION}};
  json["model"] = {{"path", report.model.path},
                   {"sha256", report.model.sha256},
                   {"opset", report.model.opset},
                   {"node_count", report.model.node_count}};
  json["device"] = {{"name", report.device.name},
                    {"source", report.device.source},
                    {"launch_mode", report.device.launch_mode},
                    {"launch_latency_us", report.device.launch_latency_us},
                    {"graph_launch_latency_us", report.device.graph_launch_latency_us},
                    {"host_launch_latency_us", report.device.host_launch_latency_us}};
  json["options"] = options_json(report.options);
  ordered_json phases = ordered_json::array();
  for (const PhaseTiming& phase : report.phases) {
    phases.push_back({{"name", phase.name}, {"seconds", phase.seconds}});
  }
  json["phases"] = phases;
  if (report.simplify.has_value()) {
    const ir::SimplifyStatistics& statistics = *report.simplify;
    ordered_json passes = ordered_json::array();
    for (const ir::PassStatistics& pass : statistics.passes) {
      passes.push_back({{"name", pass.name},
                        {"runs", pass.runs},
                        {"changed_runs", pass.changed_runs},
                        {"nodes_removed", pass.nodes_removed},
                        {"nodes_added", pass.nodes_added},
                        {"seconds", pass.seconds}});
    }
    ordered_json unknown_type_roots = ordered_json::array();
    for (const ir::UnknownTypeRoot& root : statistics.unknown_type_roots) {
      unknown_type_roots.push_back(
          {{"node", root.node}, {"op", root.op_type}, {"reason", root.reason}});
    }
    ordered_json kept = ordered_json::array();
    for (const ir::SimplifyStatistics::KeptConstant& node : statistics.kept_constants) {
      kept.push_back({{"node", node.node}, {"op", node.op_type}, {"reason", node.reason}});
    }
    json["simplify"] = {{"nodes_before", statistics.nodes_before},
                        {"nodes_after", statistics.nodes_after},
                        {"iterations", statistics.iterations},
                        {"reached_fixed_point", statistics.reached_fixed_point},
                        {"types_refined", statistics.types_refined},
                        {"unknown_types", statistics.unknown_types},
                        {"unknown_type_roots", unknown_type_roots},
                        {"constant_folding",
                         {{"folded_nodes", statistics.folded_nodes},
                          {"folded_bytes", statistics.folded_bytes},
                          {"max_folded_bytes", statistics.max_folded_constant_bytes},
                          {"kept_nodes", statistics.kept_constant_nodes},
                          {"kept", kept}}},
                        {"passes", passes}};
  } else {
    json["simplify"] = nullptr;
  }
  ordered_json kernels = {{"original", report.kernels.original},
                          {"host_shape_ops", report.kernels.host_shape_ops},
                          {"after_simplify", report.kernels.after_simplify}};
  if (!report.plan.has_value()) {
    json["kernels"] = kernels;
    json["groups"] = nullptr;
    json["unfused"] = nullptr;
    json["scoring"] = nullptr;
    json["solver"] = nullptr;
    json["modeled"] = nullptr;
    json["precision"] = precision_json(report.precision);
    return artifact::dump_json(std::move(json));
  }
  const fusion::PlannerResult& plan = report.plan->result;
  kernels["fused"] = plan.kernels_fused;
  kernels["distinct_fused_kernels"] = report.plan->distinct_kernels;
  kernels["memory_intensive_before"] = plan.memory_intensive_before;
  kernels["memory_intensive_after"] = plan.memory_intensive_after;
  kernels["compression"] = plan.kernels_fused > 0 ? static_cast<double>(report.kernels.original) /
                                                        static_cast<double>(plan.kernels_fused)
                                                  : 0.0;
  json["kernels"] = kernels;
  ordered_json groups = ordered_json::array();
  for (size_t index = 0; index < plan.groups.size(); ++index) {
    const fusion::PlannedGroup& group = plan.groups[index];
    ordered_json nodes = ordered_json::array();
    for (ir::NodeId id : group.nodes) nodes.push_back(node_json(graph, id));
    groups.push_back(
        {{"id", index},
         {"kernel", report.plan->kernel_names[index]},
         {"category", artifact::to_string(group.category)},
         {"library", group.epilogue ? std::string(artifact::library_name(group.epilogue->library))
                                    : std::string()},
         {"epilogue", group.epilogue ? group.epilogue->op_names() : std::vector<std::string>()},
         {"source", fusion::pattern_source_name(group.source)},
         {"score_us", group.score_us},
         {"bytes_saved", group.bytes_saved},
         {"predicted_time_us", group.predicted_time_us},
         {"composition_charge_us", group.charge_us},
         {"shared_memory_bytes", group.shared_memory_bytes},
         {"timing", timing_json(group.timing)},
         {"codegen", codegen_json(report.plan->group_codegen, index)},
         {"nodes", nodes}});
  }
  json["groups"] = groups;
  ordered_json unfused = ordered_json::array();
  for (const fusion::UnfusedNode& node : plan.unfused) {
    ordered_json entry = node_json(graph, node.node);
    entry["kind"] = fusion::to_string(node.kind);
    entry["reason"] = node.reason;
    entry["codegen"] =
        codegen_json(report.plan->unfused_codegen, static_cast<size_t>(unfused.size()));
    unfused.push_back(entry);
  }
  json["unfused"] = unfused;
  ordered_json rejected = ordered_json::array();
  for (const fusion::RejectedCandidate& candidate : plan.rejected) {
    ordered_json nodes = ordered_json::array();
    for (ir::NodeId id : candidate.nodes) nodes.push_back(graph.node(id).name);
    ordered_json entry = timing_json(candidate.timing);
    entry["analytic_score_us"] = candidate.analytic_score_us;
    entry["nodes"] = nodes;
    rejected.push_back(entry);
  }
  json["scoring"] = {{"method", plan.score_method},
                     {"rounds", plan.timing_rounds},
                     {"timed_candidates", plan.timed_candidates},
                     {"untimable", plan.untimable},
                     {"rejected", rejected}};
  const fusion::SolverStatistics& solver = plan.solver_statistics;
  const fusion::CandidateStatistics& candidates = plan.candidate_statistics;
  json["solver"] = {{"candidates",
                     {{"substitution", candidates.substitution},
                      {"exploratory", candidates.exploratory},
                      {"packing", candidates.packing},
                      {"epilogue", candidates.epilogue},
                      {"attention", candidates.attention},
                      {"rejected_infeasible", candidates.rejected_infeasible},
                      {"rejected_non_convex", candidates.rejected_non_convex},
                      {"hit_time_limit", candidates.hit_time_limit},
                      {"seconds", candidates.seconds}}},
                    {"components", solver.components},
                    {"variables", solver.variables},
                    {"constraints", solver.constraints},
                    {"cycle_cuts", solver.cycle_cuts},
                    {"windows", solver.windows},
                    {"status", solver.status},
                    {"objective_us", solver.objective_us},
                    {"greedy_objective_us", solver.greedy_objective_us},
                    {"gap", solver.gap},
                    {"seconds", solver.seconds}};
  json["modeled"] = {{"bytes_before", plan.estimate.bytes_before},
                     {"bytes_after", plan.estimate.bytes_after},
                     {"time_before_us", plan.estimate.time_before_us},
                     {"time_after_us", plan.estimate.time_after_us}};
  json["precision"] = precision_json(report.precision);
  return artifact::dump_json(std::move(json));
}

}  // namespace stitch::emit
