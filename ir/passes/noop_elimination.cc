// No-op elimination.
#include "ir/passes/noop_elimination.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/core/analysis.h"

namespace stitch::ir {
namespace {

bool all_equal_to(const Tensor& tensor, int64_t expected) {
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (tensor.int_at(i) != expected) return false;
  }
  return true;
}

bool input_is(const Node& node, size_t slot) {
  return slot < node.inputs.size() && node.inputs[slot] != kNoId;
}

bool same_static_type(const Graph& graph, ValueId a, ValueId b) {
  const TensorType& left = graph.value(a).type;
  const TensorType& right = graph.value(b).type;
  return left.is_static() && left.dtype != DType::kUndefined && left == right;
}

// True when `node` (a single-input-data op) copies input 0 to output 0.
bool is_noop(const Graph& graph, const Node& node, int64_t opset) {
  const std::string& op = node.op_type;
  ValueId input = node.inputs[0];
  ValueId output = node.outputs[0];
  if (op == "Identity") return true;
  if (op == "Dropout") {
    if (node.outputs.size() > 1 && node.outputs[1] != kNoId) {
      const Value& mask = graph.value(node.outputs[1]);
      if (!mask.users.empty() || mask.is_graph_output) return false;
    }
    return dropout_in_inference(graph, node);
  }
  if (op == "Cast") {
    DType from = graph.value(input).type.dtype;
    return from != DType::kUndefined && node.int_attribute("to", 0) == static_cast<int64_t>(from);
  }
  if (op == "Reshape" || op == "Expand" || op == "Flatten" || op == "Squeeze" ||
      op == "Unsqueeze" || op == "Tile") {
    return same_static_type(graph, input, output);
  }
  if (op == "Transpose") {
    std::optional<std::vector<int64_t>> perm = transpose_permutation(graph, node);
    return perm.has_value() && is_identity_permutation(*perm);
  }
  if (op == "Slice") {
    if (!same_static_type(graph, input, output)) return false;
    if (opset < 10 || !input_is(node, 4)) return true;
    const Tensor* steps = constant_data(graph, node.inputs[4]);
    return steps != nullptr && all_equal_to(*steps, 1);
  }
  if (op == "Pad") {
    if (opset < 11) {
      const Attribute* pads = node.find_attribute("pads");
      return pads != nullptr &&
             std::all_of(pads->ints.begin(), pads->ints.end(), [](int64_t p) { return p == 0; });
    }
    const Tensor* pads = input_is(node, 1) ? constant_data(graph, node.inputs[1]) : nullptr;
    return pads != nullptr && all_equal_to(*pads, 0);
  }
  if (op == "Concat") return node.inputs.size() == 1;
  if (op == "Split") return node.outputs.size() == 1;
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceProd") {
    if (node.int_attribute("noop_with_empty_axes", 0) != 1) return false;
    if (node.find_attribute("axes") != nullptr) return false;
    if (!input_is(node, 1)) return true;
    const Tensor* axes = constant_data(graph, node.inputs[1]);
    return axes != nullptr && axes->num_elements() == 0;
  }
  return false;
}

// Whether `value` is read exactly once, by `node`.
bool only_user_is(const Graph& graph, ValueId value, NodeId node) {
  const std::vector<Use>& users = graph.value(value).users;
  return users.size() == 1 && users[0].node == node;
}

// Removes `chain` (producer first; each link's output 0 feeds the next link's input
// 0; the last link's output 0 is `output`) so that `output` carries `source`'s
// data. False (nothing changed) when the names cannot be kept.
bool bypass(Graph& graph, const std::vector<NodeId>& chain, ValueId source) {
  ValueId output = graph.node(chain.back()).outputs[0];
  // Extra outputs (Dropout's mask) were checked unused by is_noop.
  auto remove_with_outputs = [&](NodeId id) {
    std::vector<ValueId> outputs = graph.node(id).outputs;
    graph.remove_node(id);
    for (ValueId value : outputs) {
      if (value == kNoId) continue;
      const Value& removed = graph.value(value);
      if (removed.users.empty() && !removed.is_graph_output && !removed.is_graph_input) {
        graph.remove_value(value);
      }
    }
  };
  if (read_by_subgraph(graph, output)) return false;
  if (!graph.value(output).is_graph_output) {
    graph.replace_all_uses(output, source);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Value& link_output = graph.value(graph.node(*it).outputs[0]);
      if (!link_output.users.empty() || link_output.is_graph_output) break;
      remove_with_outputs(*it);
    }
    return true;
  }
  const Value& input = graph.value(source);
  if (input.producer == kNoId || input.is_graph_output || !only_user_is(graph, source, chain[0])) {
    return false;
  }
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    ValueId link = graph.node(chain[i]).outputs[0];
    if (graph.value(link).is_graph_output || !only_user_is(graph, link, chain[i + 1])) {
      return false;
    }
  }
  NodeId producer = input.producer;
  int32_t slot = input.producer_output;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) remove_with_outputs(*it);
  inherit_origin(graph, producer, chain);
  graph.set_output(producer, slot, output);
  graph.remove_value(source);
  return true;
}

}  // namespace

Result<bool> eliminate_noops(Graph& graph, PassContext& context) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  bool changed = false;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.dead || !node.domain.empty() || node.inputs.empty() || node.inputs[0] == kNoId ||
        node.outputs.empty() || node.outputs[0] == kNoId || !node.implicit_inputs.empty()) {
      continue;
    }
    int64_t opset = node.opset_or(context.default_opset);
    if (is_noop(graph, node, opset)) {
      changed |= bypass(graph, {id}, node.inputs[0]);
      continue;
    }
    if (node.op_type != "Transpose") continue;
    NodeId first_id = graph.value(node.inputs[0]).producer;
    if (first_id == kNoId) continue;
    const Node& first = graph.node(first_id);
    if (first.op_type != "Transpose" || !first.domain.empty() ||
        first.outputs[0] != node.inputs[0]) {
      continue;
    }
    std::optional<std::vector<int64_t>> inner = transpose_permutation(graph, first);
    std::optional<std::vector<int64_t>> outer = transpose_permutation(graph, node);
    if (!inner || !outer) continue;
    std::optional<std::vector<int64_t>> composed = compose_permutations(*inner, *outer);
    if (composed && is_identity_permutation(*composed)) {
      changed |= bypass(graph, {first_id, id}, first.inputs[0]);
    }
  }
  return changed;
}

}  // namespace stitch::ir
