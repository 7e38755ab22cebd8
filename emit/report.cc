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
  json["kernels"] = {{"original", report.kernels.original}};
  return json.dump(2) + "\n";
}

}  // namespace stitch::emit
