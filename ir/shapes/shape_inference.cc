// Whole-graph type and shape inference with the registry's per-op rules.
//
// One pass in topological order. Known values flow with the types: initializers and
// Constant nodes give input_values, and rules hand back the values of small integer
// outputs (Shape, Gather, Concat, ...), so exporters' shape chains end in static
// Reshape targets. The per-node vectors are reused across nodes (moved into each
// context and back), so the pass does little allocation beyond the output types.
#include "ir/shapes/shape_inference.h"

#include <algorithm>
#include <deque>

#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

// Why a pool's declared output is one longer than inferred on a spatial axis, when
// ceil_mode is the reason: its last window would start in the end padding, which
// ir::sliding_window drops as PyTorch does, while the opset-17 formula (and the onnx
// package's shape inference) keeps it. "" otherwise.
std::string ceil_mode_hint(const Node& node, const TensorType& inferred,
                           const TensorType& declared) {
  if ((node.op_type != "MaxPool" && node.op_type != "AveragePool") ||
      node.int_attribute("ceil_mode", 0) == 0 || !inferred.has_shape || !declared.has_shape ||
      inferred.dims.size() != declared.dims.size() || inferred.dims.size() < 3) {
    return "";
  }
  bool one_longer = false;
  for (size_t d = 0; d < inferred.dims.size(); ++d) {
    if (inferred.dims[d] == declared.dims[d]) continue;
    if (d < 2 || declared.dims[d] != inferred.dims[d] + 1) return "";
    one_longer = true;
  }
  if (!one_longer) return "";
  return " (with ceil_mode, a window that would start in the end padding is dropped, as "
         "PyTorch does; the declared shape keeps it, as the opset-17 formula and onnx's shape "
         "inference do: such a window covers no input element)";
}

// True when `inferred` contradicts a fully static model type: a different dtype or
// rank, or a different size of a dim both know.
bool contradicts(const TensorType& inferred, const TensorType& model) {
  if (inferred.dtype != DType::kUndefined && inferred.dtype != model.dtype) return true;
  if (!inferred.has_shape) return false;
  if (inferred.dims.size() != model.dims.size()) return true;
  for (size_t i = 0; i < model.dims.size(); ++i) {
    if (inferred.dims[i] >= 0 && inferred.dims[i] != model.dims[i]) return true;
  }
  return false;
}

// The inferred type, completed with what the model's type knows.
TensorType merge(TensorType inferred, const TensorType& model) {
  if (inferred.dtype == DType::kUndefined) inferred.dtype = model.dtype;
  if (!inferred.has_shape) {
    inferred.has_shape = model.has_shape;
    inferred.dims = model.dims;
  } else if (model.has_shape && model.dims.size() == inferred.dims.size()) {
    for (size_t i = 0; i < inferred.dims.size(); ++i) {
      // A static dim from the model wins; a symbol beats the model's unknown.
      if (inferred.dims[i] == kUnknownDim || (inferred.dims[i] < 0 && model.dims[i] >= 0)) {
        inferred.dims[i] = model.dims[i];
      }
    }
  }
  return inferred;
}

}  // namespace

Status infer_shapes(Graph& graph, int64_t default_opset, const ShapeInferenceOptions& options) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  auto capacity = static_cast<size_t>(graph.value_capacity());
  std::vector<std::optional<std::vector<int64_t>>> int_values(capacity);
  std::vector<const Tensor*> constants(capacity, nullptr);
  std::deque<Tensor> owned_constants;
  for (size_t id = 0; id < capacity; ++id) {
    const Value& value = graph.value(static_cast<ValueId>(id));
    if (!value.dead && value.constant != nullptr) constants[id] = value.constant.get();
  }

  std::vector<const TensorType*> input_types;
  std::vector<const Tensor*> input_values;
  std::vector<std::optional<std::vector<int64_t>>> input_int_values;
  std::vector<std::string_view> input_names;
  std::string model_path = options.model_path;
  for (NodeId node_id : order) {
    const Node& node = graph.node(node_id);
    const OpSchema* schema = find_op_schema(node.domain, node.op_type);
    if (schema == nullptr) continue;  // Opaque: the model's types stand
    size_t inputs = node.inputs.size();
    input_types.assign(inputs, nullptr);
    input_values.assign(inputs, nullptr);
    input_int_values.resize(inputs);
    input_names.assign(inputs, std::string_view());
    for (size_t i = 0; i < inputs; ++i) {
      ValueId input = node.inputs[i];
      input_int_values[i].reset();
      if (input == kNoId) continue;
      const Value& value = graph.value(input);
      input_types[i] = &value.type;
      input_values[i] = constants[static_cast<size_t>(input)];
      input_names[i] = value.name;
      if (int_values[static_cast<size_t>(input)]) {
        input_int_values[i] = int_values[static_cast<size_t>(input)];
      }
    }
    ShapeInferenceContext ctx{node,
                              node.opset_or(default_opset),
                              std::move(input_types),
                              std::move(input_values),
                              std::move(input_int_values),
                              std::move(model_path),
                              std::move(input_names)};
    Result<ShapeInferenceResult> result = schema->infer(ctx);
    if (!result.is_ok()) return result.status();

    for (size_t i = 0; i < node.outputs.size() && i < result->output_types.size(); ++i) {
      ValueId output = node.outputs[i];
      if (output == kNoId) continue;
      Value& value = graph.value(output);
      TensorType& inferred = result->output_types[i];
      if (value.type_from_model) {
        if (value.type.is_static() && value.type.dtype != DType::kUndefined &&
            contradicts(inferred, value.type)) {
          return ctx.error("output " + std::to_string(i) + " \"" + value.name +
                           "\" is inferred as " + to_string(inferred) + " but the model declares " +
                           to_string(value.type) + "; fix the value_info of \"" + value.name +
                           "\" or re-export the model" +
                           ceil_mode_hint(node, inferred, value.type));
        }
        value.type = merge(std::move(inferred), value.type);
      } else {
        value.type = std::move(inferred);
      }
      if (i < result->output_int_values.size()) {
        int_values[static_cast<size_t>(output)] = std::move(result->output_int_values[i]);
      }
    }
    if (node.op_type == "Constant" && !node.outputs.empty() && node.outputs[0] != kNoId) {
      const Tensor*& constant = constants[static_cast<size_t>(node.outputs[0])];
      // A `value` tensor is used in place (it may be a weight); the value_* forms are
      // built once.
      if (const Attribute* value = node.find_attribute("value"); value && value->tensor) {
        constant = value->tensor.get();
      } else if (std::optional<Tensor> built = constant_node_value(node)) {
        constant = &owned_constants.emplace_back(std::move(*built));
      }
    }
    input_types = std::move(ctx.input_types);
    input_values = std::move(ctx.input_values);
    input_int_values = std::move(ctx.input_int_values);
    model_path = std::move(ctx.model_path);
    input_names = std::move(ctx.input_names);
  }
  return Status::ok();
}

bool has_static_type(const Graph& graph, ValueId value) {
  const TensorType& type = graph.value(value).type;
  return type.is_static() && type.dtype != DType::kUndefined;
}

int64_t count_unknown_types(const Graph& graph) {
  int64_t unknown = 0;
  for (NodeId id : graph.node_ids()) {
    for (ValueId output : graph.node(id).outputs) {
      if (output != kNoId && !has_static_type(graph, output)) ++unknown;
    }
  }
  return unknown;
}

Result<std::vector<UnknownTypeRoot>> unknown_type_roots(const Graph& graph, size_t limit) {
  std::vector<UnknownTypeRoot> roots;
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  auto unknown = [&](ValueId value) { return value != kNoId && !has_static_type(graph, value); };
  for (NodeId id : order) {
    if (roots.size() == limit) break;
    const Node& node = graph.node(id);
    if (std::any_of(node.inputs.begin(), node.inputs.end(), unknown) ||
        std::none_of(node.outputs.begin(), node.outputs.end(), unknown)) {
      continue;
    }
    // Ops whose output size is data-dependent by definition, registered or not.
    const bool data_dependent_op =
        node.domain.empty() && (node.op_type == "Unique" || node.op_type == "NonMaxSuppression" ||
                                node.op_type == "StringSplit");
    const OpSchema* schema = find_op_schema(node.domain, node.op_type);
    const bool has_rule = schema != nullptr && schema->infer;
    roots.push_back({node.name, node.op_type,
                     has_rule || data_dependent_op ? "data-dependent" : "no shape rule",
                     node.display_name()});
  }
  return roots;
}

}  // namespace stitch::ir
