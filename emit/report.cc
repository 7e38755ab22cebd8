// The fusion report, out/report.json.
#include "emit/report.h"

#include <nlohmann/json.hpp>

#include "ir/op_registry.h"

namespace stitch::emit {

int64_t count_original_kernels(const ir::Graph& graph) {
  int64_t count = 0;
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    if (ir::op_kind(node) == ir::OpKind::kView) continue;
    if (node.domain.empty() && node.op_type == "Constant") continue;
    ++count;
  }
  return count;
}

std::string render_report(const Report& report) {
  using nlohmann::ordered_json;
  ordered_json json;
  json["schema"] = kReportSchema;
  json["tool"] = {{"name", "stitchopt"}, {"version", STITCH_VERSION}};
  json["model"] = {{"path", report.model.path},
                   {"sha256", report.model.sha256},
                   {"opset", report.model.opset},
                   {"node_count", report.model.node_count}};
  ordered_json input_shapes = ordered_json::object();
  for (const auto& [name, dims] : report.options.input_shapes) input_shapes[name] = dims;
  json["options"] = {{"input_shapes", input_shapes}};
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
    json["simplify"] = {{"nodes_before", statistics.nodes_before},
                        {"nodes_after", statistics.nodes_after},
                        {"iterations", statistics.iterations},
                        {"reached_fixed_point", statistics.reached_fixed_point},
                        {"passes", passes}};
  } else {
    json["simplify"] = nullptr;
  }
  json["kernels"] = {{"original", report.kernels.original},
                     {"after_simplify", report.kernels.after_simplify}};
  return json.dump(2) + "\n";
}

}  // namespace stitch::emit
