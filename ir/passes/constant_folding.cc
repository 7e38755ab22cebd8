// Constant folding.
#include "ir/passes/constant_folding.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/analysis.h"
#include "ir/interpreter.h"

namespace stitch::ir {
namespace {

bool is_random(std::string_view op_type) {
  return op_type == "RandomNormal" || op_type == "RandomNormalLike" || op_type == "RandomUniform" ||
         op_type == "RandomUniformLike" || op_type == "Multinomial" || op_type == "Bernoulli";
}

// The tensor a Constant node stands for; nullopt for sparse or missing values.
std::optional<Tensor> constant_node_tensor(const Node& node) {
  for (const Attribute& attribute : node.attributes) {
    if (attribute.name == "value" && attribute.tensor != nullptr) return *attribute.tensor;
    if (attribute.name == "value_float") return Tensor::from_float({}, {attribute.f});
    if (attribute.name == "value_floats") {
      return Tensor::from_float({static_cast<int64_t>(attribute.floats.size())}, attribute.floats);
    }
    if (attribute.name == "value_int") return Tensor::from_int64({}, {attribute.i});
    if (attribute.name == "value_ints") {
      return Tensor::from_int64({static_cast<int64_t>(attribute.ints.size())}, attribute.ints);
    }
    if (attribute.name == "value_string" || attribute.name == "value_strings") {
      Tensor tensor;
      tensor.dtype = DType::kString;
      if (attribute.name == "value_string") {
        tensor.strings = {attribute.s};
      } else {
        tensor.dims = {static_cast<int64_t>(attribute.strings.size())};
        tensor.strings = attribute.strings;
      }
      return tensor;
    }
  }
  return std::nullopt;
}

bool constant_nodes_to_initializers(Graph& graph) {
  bool changed = false;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.op_type != "Constant" || !node.domain.empty() || node.outputs.size() != 1 ||
        node.outputs[0] == kNoId) {
      continue;
    }
    std::optional<Tensor> tensor = constant_node_tensor(node);
    if (!tensor) continue;
    ValueId output = node.outputs[0];
    graph.remove_node(id);
    graph.make_initializer(output, std::move(*tensor));
    changed = true;
  }
  return changed;
}

bool foldable_op(const Node& node) {
  if (!node.domain.empty() || is_random(node.op_type) || node.op_type == "Constant" ||
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

Result<bool> ConstantFoldingPass::run(Graph& graph, PassContext& context) {
  bool changed = constant_nodes_to_initializers(graph);
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
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
    int64_t opset = node.opset > 0 ? node.opset : context.default_opset;
    Result<std::vector<Tensor>> results = evaluate_node(node, opset, inputs);
    if (!results.is_ok() || results->size() < node.outputs.size()) continue;
    int64_t produced = 0;
    for (const Tensor& tensor : *results) produced += static_cast<int64_t>(tensor.bytes.size());
    if (!within_limit(produced)) continue;

    std::vector<ValueId> outputs = node.outputs;
    std::vector<ValueId> node_inputs = node.inputs;
    graph.remove_node(id);
    for (size_t slot = 0; slot < outputs.size(); ++slot) {
      if (outputs[slot] == kNoId) continue;
      graph.make_initializer(outputs[slot], std::move((*results)[slot]));
    }
    for (ValueId input : node_inputs) graph.remove_value_if_unused(input);
    changed = true;
  }
  return changed;
}

}  // namespace stitch::ir
