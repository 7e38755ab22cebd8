// Shape folding.
#include "ir/passes/shape_folding.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"
#include "ir/reference/interpreter.h"

namespace stitch::ir {
namespace {

bool is_chain_op(std::string_view op_type) {
  // clang-format off
  static constexpr std::array<std::string_view, 25> kChainOps = {
      "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Add", "Sub", "Mul",
      "Div", "Equal", "Less", "Greater", "Not", "Where", "Range", "ConstantOfShape",
      "Reshape", "Expand", "Neg", "Abs", "Max", "Min", "ReduceProd", "Identity"};
  // clang-format on
  return std::find(kChainOps.begin(), kChainOps.end(), op_type) != kChainOps.end();
}

std::optional<Tensor> shape_value(const Graph& graph, const Node& node, int64_t opset) {
  const OpSchema* schema = find_op_schema(node.domain, node.op_type);
  if (schema == nullptr || node.inputs.size() != 1 || node.inputs[0] == kNoId ||
      node.outputs.size() != 1 || node.outputs[0] == kNoId) {
    return std::nullopt;
  }
  const Value& input = graph.value(node.inputs[0]);
  ShapeInferenceContext context{node, opset, {&input.type}, {nullptr}, {std::nullopt}, "", {}};
  Result<ShapeInferenceResult> inferred = schema->infer(context);
  if (!inferred.is_ok() || inferred->output_int_values.empty() ||
      !inferred->output_int_values[0].has_value()) {
    return std::nullopt;
  }
  const std::vector<int64_t>& values = *inferred->output_int_values[0];
  if (node.op_type == "Size") return Tensor::from_int64({}, values);
  return Tensor::from_int64({static_cast<int64_t>(values.size())}, values);
}

// Step 2: evaluates a chain op over constants, within kMaxChainElements.
std::optional<std::vector<Tensor>> evaluate_chain(const Graph& graph, const Node& node,
                                                  int64_t opset) {
  std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    if (node.inputs[slot] == kNoId) continue;
    inputs[slot] = constant_data(graph, node.inputs[slot]);
    if (inputs[slot] == nullptr) return std::nullopt;
  }
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    int64_t elements = graph.value(output).type.num_elements();
    if (elements > kMaxChainElements) return std::nullopt;
  }
  Result<std::vector<Tensor>> results = evaluate_node(node, opset, inputs);
  if (!results.is_ok() || results->size() < node.outputs.size()) return std::nullopt;
  for (const Tensor& tensor : *results) {
    if (tensor.num_elements() > kMaxChainElements) return std::nullopt;
  }
  return std::move(results).value();
}

// Step 3: the constant a Reshape/Expand/ConstantOfShape/Tile's shape input should
// hold, or nullopt when it stays.
std::optional<Tensor> static_shape_input(const Graph& graph, const Node& node) {
  const std::string& op = node.op_type;
  size_t slot = op == "ConstantOfShape" ? 0 : 1;
  if ((op != "Reshape" && op != "Expand" && op != "ConstantOfShape" && op != "Tile") ||
      node.inputs.size() <= slot || node.inputs[slot] == kNoId || node.outputs.empty() ||
      node.outputs[0] == kNoId) {
    return std::nullopt;
  }
  // Constant already (or a graph input, which the static type must not override).
  if (graph.value(node.inputs[slot]).producer == kNoId ||
      constant_data(graph, node.inputs[slot]) != nullptr) {
    return std::nullopt;
  }
  const TensorType& output = graph.value(node.outputs[0]).type;
  if (!output.is_static()) return std::nullopt;
  std::vector<int64_t> dims = output.dims;
  if (op == "Reshape" && node.int_attribute("allowzero", 0) == 0) {
    for (int64_t dim : dims) {
      if (dim == 0) return std::nullopt;
    }
  }
  if (op == "Tile") {
    const TensorType& input = graph.value(node.inputs[0]).type;
    if (!input.is_static() || input.dims.size() != dims.size()) return std::nullopt;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (input.dims[i] == 0 || dims[i] % input.dims[i] != 0) return std::nullopt;
      dims[i] /= input.dims[i];
    }
  }
  return Tensor::from_int64({static_cast<int64_t>(dims.size())}, dims);
}

}  // namespace

Result<bool> fold_shapes(Graph& graph, PassContext& context) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  bool changed = false;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() || !node.implicit_inputs.empty()) continue;
    int64_t opset = node.opset_or(context.default_opset);
    if (node.op_type == "Shape" || node.op_type == "Size") {
      std::optional<Tensor> value = shape_value(graph, node, opset);
      if (!value) continue;
      std::vector<Tensor> results;
      results.push_back(std::move(*value));
      context.count_fold(results);
      replace_with_constants(graph, id, std::move(results));
      changed = true;
      continue;
    }
    if (std::optional<Tensor> shape = static_shape_input(graph, node)) {
      size_t slot = node.op_type == "ConstantOfShape" ? 0 : 1;
      std::string name =
          graph.unique_value_name(graph.value(node.outputs[0]).name + "_static_shape");
      ValueId constant = graph.add_initializer(std::move(name), std::move(*shape));
      graph.set_input(id, static_cast<int32_t>(slot), constant);
      changed = true;
    }
    if (is_chain_op(node.op_type)) {
      if (std::optional<std::vector<Tensor>> results = evaluate_chain(graph, node, opset)) {
        context.count_fold(*results);
        replace_with_constants(graph, id, std::move(*results));
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace stitch::ir
