// Constant folding.
#include "ir/passes/constant_folding.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/reference/interpreter.h"

namespace stitch::ir {
namespace {

bool constant_nodes_to_initializers(Graph& graph) {
  bool changed = false;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.op_type != "Constant" || !node.domain.empty() || node.outputs.size() != 1 ||
        node.outputs[0] == kNoId) {
      continue;
    }
    std::optional<Tensor> tensor = constant_node_value(node);
    if (!tensor) continue;
    ValueId output = node.outputs[0];
    graph.remove_node(id);
    graph.make_initializer(output, std::move(*tensor));
    changed = true;
  }
  return changed;
}

bool foldable_op(const Node& node) {
  if (!node.domain.empty() || is_random_op(node.op_type) || node.op_type == "Constant" ||
      !node.implicit_inputs.empty() || !has_reference_evaluation(node.domain, node.op_type)) {
    return false;
  }
  for (const Attribute& attribute : node.attributes) {
    if (attribute.kind == AttributeKind::kGraph || attribute.kind == AttributeKind::kGraphs) {
      return false;
    }
  }
  return true;
}

// Bytes of the input initializers only `node` reads (they die with the fold).
int64_t freed_bytes(const Graph& graph, const Node& node) {
  int64_t freed = 0;
  std::vector<ValueId> seen;
  for (ValueId input : node.inputs) {
    if (input == kNoId || std::find(seen.begin(), seen.end(), input) != seen.end()) continue;
    seen.push_back(input);
    const Value& value = graph.value(input);
    bool only_this_node = std::all_of(value.users.begin(), value.users.end(),
                                      [&](const Use& use) { return use.node == node.id; });
    if (only_this_node && !value.is_graph_output) {
      freed += static_cast<int64_t>(value.constant->bytes.size());
    }
  }
  return freed;
}

// Bytes of the outputs by their recorded types; nullopt when a type is not static.
std::optional<int64_t> static_output_bytes(const Graph& graph, const Node& node) {
  int64_t total = 0;
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    int64_t bytes = graph.value(output).type.num_bytes();
    if (bytes < 0) return std::nullopt;
    total += bytes;
  }
  return total;
}

}  // namespace

Result<bool> fold_constants(Graph& graph, PassContext& context) {
  bool changed = constant_nodes_to_initializers(graph);
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  std::vector<const Tensor*> inputs;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (!foldable_op(node)) continue;
    inputs.assign(node.inputs.size(), nullptr);
    bool all_constant = true;
    for (size_t slot = 0; slot < node.inputs.size() && all_constant; ++slot) {
      if (node.inputs[slot] == kNoId) continue;
      inputs[slot] = constant_data(graph, node.inputs[slot]);
      all_constant = inputs[slot] != nullptr;
    }
    if (!all_constant) continue;
    int64_t freed = freed_bytes(graph, node);
    auto within_limit = [&](int64_t bytes) {
      return bytes <= context.max_folded_constant_bytes || bytes <= freed;
    };
    std::optional<int64_t> predicted = static_output_bytes(graph, node);
    if (predicted && !within_limit(*predicted)) continue;
    int64_t opset = node.opset_or(context.default_opset);
    Result<std::vector<Tensor>> results = evaluate_node(node, opset, inputs);
    if (!results.is_ok() || results->size() < node.outputs.size()) continue;
    int64_t produced = 0;
    for (const Tensor& tensor : *results) produced += static_cast<int64_t>(tensor.bytes.size());
    if (!within_limit(produced)) continue;
    replace_with_constants(graph, id, std::move(*results));
    changed = true;
  }
  return changed;
}

}  // namespace stitch::ir
