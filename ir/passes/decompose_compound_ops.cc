// Opens compound ops into primitive ops (see the header for the rules).
#include "ir/passes/decompose_compound_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

bool known_float(const TensorType& type) { return dtype_is_float(type.dtype) && type.has_shape; }

// The type a decomposition of a float16 or bfloat16 op computes in where its
// primitive form, rounded to 16 bits after every step, would overflow or drift from
// the op: float32 (the reference interpreter evaluates these ops in double and
// rounds once, ONNX Runtime in float). Other dtypes compute in their own type.
DType widened(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? DType::kFloat32 : dtype;
}

// The values Builder::normalize creates.
struct Normalized {
  ValueId mean;
  ValueId inverse;  // 1 / sqrt(variance + epsilon)
  ValueId normalized;
};

// Creates the primitive nodes that replace one compound node. Created nodes are
// named "<compound name>/<role>", carry the compound node's origin and the model's
// default opset; their output types come from the registry's shape rules.
//
// Values and nodes are held by id, never by reference, across the calls that add
// to the graph: adding a value or node may move the graph's storage. `compound` is
// the caller's copy of the node for the same reason.
class Builder {
 public:
  Builder(Graph& graph, const Node& compound, int64_t opset)
      : graph_(graph),
        compound_(compound),
        opset_(opset),
        base_(compound.name.empty() ? compound.op_type + "_" + std::to_string(compound.id)
                                    : compound.name) {}

  int64_t opset() const { return opset_; }

  // Removes the compound node; its outputs stay (without producer) for the last
  // created nodes to produce.
  void remove_compound() { graph_.remove_node(compound_.id); }

  ValueId constant(std::string_view role, Tensor tensor) {
    return graph_.add_initializer(graph_.unique_value_name(base_ + "/" + std::string(role)),
                                  std::move(tensor));
  }
  ValueId scalar(std::string_view role, DType dtype, double value) {
    return constant(role, Tensor::from_doubles(dtype, {}, {value}));
  }
  ValueId int64s(std::string_view role, const std::vector<int64_t>& values) {
    return constant(role, Tensor::from_int64({static_cast<int64_t>(values.size())}, values));
  }

  // Adds `op_type(inputs)` producing `output` (a new value when kNoId).
  Result<ValueId> op(const std::string& op_type, const std::vector<ValueId>& inputs,
                     std::vector<Attribute> attributes, std::string_view role,
                     ValueId output = kNoId) {
    std::string node_name = base_ + "/" + std::string(role);
    if (output == kNoId) output = graph_.add_value(graph_.unique_value_name(node_name), {});
    NodeId id = graph_.add_node(op_type, inputs, {output}, "", node_name);
    Node& created = graph_.node(id);
    created.opset = opset_;
    created.attributes = std::move(attributes);
    inherit_origin(graph_, id, {compound_.id});
    const OpSchema* schema = find_op_schema("", op_type);
    STITCH_CHECK(schema != nullptr) << op_type << " is not in the registry";
    const Node& node = graph_.node(id);
    ShapeInferenceContext context{.node = node,
                                  .opset = opset_,
                                  .input_types = {},
                                  .input_values = {},
                                  .input_int_values = {},
                                  .model_path = {},
                                  .input_names = {}};
    for (ValueId input : inputs) {
      context.input_types.push_back(&graph_.value(input).type);
      context.input_values.push_back(graph_.value(input).constant.get());
      context.input_int_values.emplace_back();
      context.input_names.emplace_back(graph_.value(input).name);
    }
    Result<ShapeInferenceResult> inferred = schema->infer(context);
    if (!inferred.is_ok()) {
      return Status::internal("decompose: node " + compound_.display_name() +
                              ": the decomposition's node " + node.display_name() +
                              " is rejected by its shape rule: " + inferred.status().message());
    }
    Value& produced = graph_.value(output);
    const TensorType& rule_type = inferred->output_types.at(0);
    // A compound output keeps its recorded type where it is known.
    if (produced.type.dtype == DType::kUndefined || !produced.type.has_shape) {
      produced.type = rule_type;
    }
    return output;
  }

  // ReduceX over `axes` with keepdims=1, in the form the opset requires.
  Result<ValueId> reduce(const std::string& op_type, ValueId input,
                         const std::vector<int64_t>& axes, std::string_view role,
                         ValueId output = kNoId) {
    bool axes_as_input = op_type == "ReduceSum" ? opset_ >= 13 : opset_ >= 18;
    if (axes_as_input) {
      ValueId axes_value = int64s(std::string(role) + "_axes", axes);
      return op(op_type, {input, axes_value}, {Attribute::make_int("keepdims", 1)}, role, output);
    }
    return op(op_type, {input},
              {Attribute::make_ints("axes", axes), Attribute::make_int("keepdims", 1)}, role,
              output);
  }

  Result<ValueId> cast(ValueId input, DType to, std::string_view role, ValueId output = kNoId) {
    return op("Cast", {input}, {Attribute::make_int("to", static_cast<int64_t>(to))}, role, output);
  }

  // `input` as `to`: itself when it has that dtype, else a Cast node (one per input
  // and dtype, so a value read many times is converted once).
  Result<ValueId> convert(ValueId input, DType to, std::string_view role) {
    if (graph_.value(input).type.dtype == to) return input;
    auto cached = converted_.find({input, to});
    if (cached != converted_.end()) return cached->second;
    STITCH_ASSIGN_OR_RETURN(ValueId result, cast(input, to, role));
    converted_.emplace(std::pair{input, to}, result);
    return result;
  }

  // `value` ([C]) as `dtype`, shaped [C, 1, ..., 1] to broadcast over axis 1 of a
  // rank-`rank` tensor: a converted, reshaped copy for an initializer, else
  // Cast and Reshape nodes where needed.
  Result<ValueId> per_channel(ValueId value, int64_t rank, DType dtype, std::string_view role) {
    int64_t trailing = std::max<int64_t>(rank - 2, 0);
    const Value& source = graph_.value(value);
    bool converts = source.type.dtype != dtype;
    if (source.is_initializer() && !source.is_graph_input && (trailing > 0 || converts)) {
      // The tensor lives behind a shared pointer: adding the copy does not move it.
      std::shared_ptr<const Tensor> original = source.constant;
      int64_t count = original->num_elements();
      std::vector<int64_t> dims = {count};
      dims.insert(dims.end(), static_cast<size_t>(trailing), 1);
      Tensor reshaped;
      if (converts) {
        std::vector<double> values(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = original->float_at(i);
        reshaped = Tensor::from_doubles(dtype, std::move(dims), values);
      } else {
        reshaped = *original;
        reshaped.dims = std::move(dims);
        reshaped.external.reset();
      }
      return constant(role, std::move(reshaped));
    }
    STITCH_ASSIGN_OR_RETURN(value, convert(value, dtype, std::string(role) + "_cast"));
    if (trailing == 0) return value;
    std::vector<int64_t> shape = {-1};
    shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
    ValueId shape_value = int64s(std::string(role) + "_shape", shape);
    return op("Reshape", {value, shape_value}, {}, role);
  }

  // x * scale + bias with [C] `scale` and `bias` applied along axis 1 of a
  // rank-`rank` x, in x's dtype (roles "scale_<suffix>", "bias_<suffix>", "scaled",
  // "biased").
  Result<ValueId> affine(ValueId x, ValueId scale, ValueId bias, int64_t rank,
                         std::string_view suffix, ValueId output = kNoId) {
    std::string tag(suffix);
    DType dtype = graph_.value(x).type.dtype;
    STITCH_ASSIGN_OR_RETURN(ValueId scale_c, per_channel(scale, rank, dtype, "scale_" + tag));
    STITCH_ASSIGN_OR_RETURN(ValueId bias_c, per_channel(bias, rank, dtype, "bias_" + tag));
    STITCH_ASSIGN_OR_RETURN(ValueId scaled, op("Mul", {x, scale_c}, {}, "scaled"));
    return op("Add", {scaled, bias_c}, {}, "biased", output);
  }

  // Ends a decomposition that computed `result` in a wider type than the op's
  // `dtype`: a Cast to `dtype` producing `output`. Nothing to add when `result` is
  // `output` (the decomposition computed in the op's own dtype).
  Status finish(ValueId result, DType dtype, ValueId output) {
    if (result == output) return Status::ok();
    return cast(result, dtype, "output_cast", output).status();
  }

  // (x - mean) / sqrt(mean((x - mean)^2) + epsilon) over `axes`, as
  // centered * Reciprocal(Sqrt(variance + epsilon)). Writes the mean and the
  // inverse deviation into `mean_output` / `inv_output` when given.
  Result<Normalized> normalize(ValueId x, const std::vector<int64_t>& axes, double epsilon,
                               ValueId mean_output = kNoId, ValueId inv_output = kNoId) {
    DType dtype = graph_.value(x).type.dtype;
    STITCH_ASSIGN_OR_RETURN(ValueId mean, reduce("ReduceMean", x, axes, "mean", mean_output));
    STITCH_ASSIGN_OR_RETURN(ValueId centered, op("Sub", {x, mean}, {}, "centered"));
    STITCH_ASSIGN_OR_RETURN(ValueId square, op("Mul", {centered, centered}, {}, "square"));
    STITCH_ASSIGN_OR_RETURN(ValueId variance, reduce("ReduceMean", square, axes, "variance"));
    ValueId epsilon_value = scalar("epsilon", dtype, epsilon);
    STITCH_ASSIGN_OR_RETURN(ValueId shifted,
                            op("Add", {variance, epsilon_value}, {}, "variance_eps"));
    STITCH_ASSIGN_OR_RETURN(ValueId deviation, op("Sqrt", {shifted}, {}, "stddev"));
    STITCH_ASSIGN_OR_RETURN(ValueId inverse,
                            op("Reciprocal", {deviation}, {}, "inv_stddev", inv_output));
    STITCH_ASSIGN_OR_RETURN(ValueId normalized, op("Mul", {centered, inverse}, {}, "normalized"));
    return Normalized{mean, inverse, normalized};
  }

 private:
  Graph& graph_;
  const Node& compound_;
  int64_t opset_;
  std::string base_;
  std::map<std::pair<ValueId, DType>, ValueId> converted_;
};

std::vector<int64_t> axes_from(int64_t first, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t axis = first; axis < rank; ++axis) axes.push_back(axis);
  return axes;
}

ValueId output_or_none(const Node& node, size_t slot) {
  return slot < node.outputs.size() ? node.outputs[slot] : kNoId;
}

ValueId input_or_none(const Node& node, size_t slot) {
  return slot < node.inputs.size() ? node.inputs[slot] : kNoId;
}

// Each decompose_* function checks its preconditions first and returns false,
// touching nothing, when the node stays; else it removes the node and builds the
// replacement, whose last node produces the node's output value.

// The type a normalization with stash type `stash` and input dtype `input` computes
// its statistics in: the stash type, widened, and float64 for a float64 input.
DType stage_one_type(DType stash, DType input) {
  return input == DType::kFloat64 ? DType::kFloat64 : widened(stash);
}

// The float dtype an int attribute such as stash_type names; nullopt for any other
// value (the importer refuses those, a graph built otherwise keeps the node).
std::optional<DType> float_dtype_attribute(const Node& node, std::string_view name,
                                           int64_t fallback) {
  int64_t value = node.int_attribute(name, fallback);
  if (value < 0 || value > std::numeric_limits<int32_t>::max() ||
      !dtype_is_valid_onnx(static_cast<int32_t>(value))) {
    return std::nullopt;
  }
  auto dtype = static_cast<DType>(value);
  if (!dtype_is_float(dtype)) return std::nullopt;
  return dtype;
}

Result<bool> decompose_layer_norm(Graph& graph, const Node& node, Builder& b) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type)) return false;
  int64_t rank = type.rank();
  int64_t axis = node.int_attribute("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  std::optional<DType> stash = float_dtype_attribute(node, "stash_type", 1);
  if (!stash) return false;
  // Stage one (statistics, normalization) in the stash type as the ONNX function
  // body, but never narrower than float32 or than x: ONNX Runtime has no kernel for
  // a bfloat16 stash and computes a float64 x in double whatever the stash, as the
  // reference does. Stage two (scale, bias) in the widened input type, so a float16
  // result is rounded once, as ONNX Runtime's kernel and the reference do.
  DType stage_one = stage_one_type(*stash, type.dtype);
  DType affine_type = widened(type.dtype);
  // The Mean and InvStdDev outputs have the stash type: written directly, or Cast.
  ValueId mean_output = output_or_none(node, 1);
  ValueId inv_output = output_or_none(node, 2);
  bool stats_cast = stage_one != *stash;
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], stage_one, "stash_cast"));
  STITCH_ASSIGN_OR_RETURN(
      Normalized stats,
      b.normalize(x, axes_from(axis, rank), node.float_attribute("epsilon", 1e-5f),
                  stats_cast ? kNoId : mean_output, stats_cast ? kNoId : inv_output));
  if (stats_cast && mean_output != kNoId) {
    STITCH_RETURN_IF_ERROR(b.cast(stats.mean, *stash, "mean_cast", mean_output).status());
  }
  if (stats_cast && inv_output != kNoId) {
    STITCH_RETURN_IF_ERROR(b.cast(stats.inverse, *stash, "inv_stddev_cast", inv_output).status());
  }
  STITCH_ASSIGN_OR_RETURN(ValueId normalized,
                          b.convert(stats.normalized, affine_type, "normalized_cast"));
  STITCH_ASSIGN_OR_RETURN(ValueId scale, b.convert(node.inputs[1], affine_type, "scale_cast"));
  ValueId bias = input_or_none(node, 2);
  if (bias != kNoId) {
    STITCH_ASSIGN_OR_RETURN(bias, b.convert(bias, affine_type, "bias_cast"));
  }
  ValueId y = affine_type == type.dtype ? node.outputs[0] : kNoId;
  STITCH_ASSIGN_OR_RETURN(
      ValueId result, b.op("Mul", {normalized, scale}, {}, "scaled", bias == kNoId ? y : kNoId));
  if (bias != kNoId) {
    STITCH_ASSIGN_OR_RETURN(result, b.op("Add", {result, bias}, {}, "biased", y));
  }
  STITCH_RETURN_IF_ERROR(b.finish(result, type.dtype, node.outputs[0]));
  return true;
}

// Softmax and LogSoftmax stay in their dtype, float16 included: after the shift by
// the row maximum every Exp is at most 1, and the ReduceSum rounds its sum once.
Result<bool> decompose_softmax(Graph& graph, const Node& node, Builder& b, int64_t node_opset) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type)) return false;
  int64_t rank = type.rank();
  int64_t axis = node.int_attribute("axis", node_opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  // Before opset 13 the input is coerced to 2D at `axis`: the row is every axis
  // from `axis` on.
  std::vector<int64_t> axes = node_opset >= 13 ? std::vector<int64_t>{axis} : axes_from(axis, rank);
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId max, b.reduce("ReduceMax", node.inputs[0], axes, "max"));
  STITCH_ASSIGN_OR_RETURN(ValueId shifted, b.op("Sub", {node.inputs[0], max}, {}, "shifted"));
  STITCH_ASSIGN_OR_RETURN(ValueId exp, b.op("Exp", {shifted}, {}, "exp"));
  STITCH_ASSIGN_OR_RETURN(ValueId sum, b.reduce("ReduceSum", exp, axes, "sum"));
  if (node.op_type == "Softmax") {
    STITCH_RETURN_IF_ERROR(b.op("Div", {exp, sum}, {}, "div", node.outputs[0]).status());
  } else {
    STITCH_ASSIGN_OR_RETURN(ValueId log_sum, b.op("Log", {sum}, {}, "log_sum"));
    STITCH_RETURN_IF_ERROR(b.op("Sub", {shifted, log_sum}, {}, "sub", node.outputs[0]).status());
  }
  return true;
}

Result<bool> decompose_gelu(Graph& graph, const Node& node, Builder& b) {
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  if (!dtype_is_float(dtype)) return false;
  std::string approximate = node.string_attribute("approximate", "none");
  if (approximate != "none" && approximate != "tanh") return false;
  b.remove_compound();
  ValueId x = node.inputs[0];
  ValueId inner;
  if (approximate == "none") {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    ValueId inv_sqrt2 = b.scalar("inv_sqrt2", dtype, 1.0 / std::sqrt(2.0));
    STITCH_ASSIGN_OR_RETURN(ValueId scaled, b.op("Mul", {x, inv_sqrt2}, {}, "scaled"));
    STITCH_ASSIGN_OR_RETURN(inner, b.op("Erf", {scaled}, {}, "erf"));
  } else {
    // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    STITCH_ASSIGN_OR_RETURN(ValueId square, b.op("Mul", {x, x}, {}, "square"));
    STITCH_ASSIGN_OR_RETURN(ValueId cube, b.op("Mul", {square, x}, {}, "cube"));
    ValueId coefficient = b.scalar("coefficient", dtype, 0.044715);
    STITCH_ASSIGN_OR_RETURN(ValueId term, b.op("Mul", {cube, coefficient}, {}, "cube_scaled"));
    STITCH_ASSIGN_OR_RETURN(ValueId sum, b.op("Add", {x, term}, {}, "inner"));
    ValueId sqrt_2_over_pi = b.scalar("sqrt_2_over_pi", dtype, std::sqrt(2.0 / std::numbers::pi));
    STITCH_ASSIGN_OR_RETURN(ValueId scaled, b.op("Mul", {sum, sqrt_2_over_pi}, {}, "scaled"));
    STITCH_ASSIGN_OR_RETURN(inner, b.op("Tanh", {scaled}, {}, "tanh"));
  }
  ValueId one = b.scalar("one", dtype, 1.0);
  STITCH_ASSIGN_OR_RETURN(ValueId plus_one, b.op("Add", {inner, one}, {}, "plus_one"));
  // Halved first: x * (1 + t) overflows from x = 32752 in float16, 0.5 * x never.
  ValueId half = b.scalar("half", dtype, 0.5);
  STITCH_ASSIGN_OR_RETURN(ValueId half_x, b.op("Mul", {x, half}, {}, "half_mul"));
  STITCH_RETURN_IF_ERROR(b.op("Mul", {half_x, plus_one}, {}, "mul", node.outputs[0]).status());
  return true;
}

// max(0, min(1, alpha * x + beta)); the result goes to `output` (a new value when
// kNoId).
Result<ValueId> hard_sigmoid(Builder& b, ValueId x, DType dtype, double alpha, double beta,
                             ValueId output) {
  ValueId alpha_value = b.scalar("alpha", dtype, alpha);
  STITCH_ASSIGN_OR_RETURN(ValueId scaled, b.op("Mul", {x, alpha_value}, {}, "scaled"));
  ValueId beta_value = b.scalar("beta", dtype, beta);
  STITCH_ASSIGN_OR_RETURN(ValueId shifted, b.op("Add", {scaled, beta_value}, {}, "shifted"));
  ValueId one = b.scalar("one", dtype, 1.0);
  STITCH_ASSIGN_OR_RETURN(ValueId upper, b.op("Min", {shifted, one}, {}, "min"));
  ValueId zero = b.scalar("zero", dtype, 0.0);
  return b.op("Max", {upper, zero}, {}, "max", output);
}

// HardSigmoid's alpha and beta are the model's: in float16 they may round far off or
// to infinity (alpha = 1e5 makes 0 * alpha NaN), so float16 computes in float32.
Result<bool> decompose_hard_sigmoid(Graph& graph, const Node& node, Builder& b) {
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  // Min and Max broadcast from opset 8.
  if (!dtype_is_float(dtype) || b.opset() < 8) return false;
  DType compute = widened(dtype);
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], compute, "input_cast"));
  STITCH_ASSIGN_OR_RETURN(
      ValueId result,
      hard_sigmoid(b, x, compute, node.float_attribute("alpha", 0.2f),
                   node.float_attribute("beta", 0.5f), compute == dtype ? node.outputs[0] : kNoId));
  STITCH_RETURN_IF_ERROR(b.finish(result, dtype, node.outputs[0]));
  return true;
}

Result<bool> decompose_hard_swish(Graph& graph, const Node& node, Builder& b) {
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  if (!dtype_is_float(dtype) || b.opset() < 8) return false;
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId gate,
                          hard_sigmoid(b, node.inputs[0], dtype, 1.0 / 6.0, 0.5, kNoId));
  STITCH_RETURN_IF_ERROR(
      b.op("Mul", {node.inputs[0], gate}, {}, "gate_mul", node.outputs[0]).status());
  return true;
}

// log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): Exp of a non-positive number
// cannot overflow (the plain form is inf from x = 89 in float32, 12 in float16).
Result<bool> decompose_softplus(Graph& graph, const Node& node, Builder& b) {
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  if (!dtype_is_float(dtype)) return false;
  b.remove_compound();
  ValueId x = node.inputs[0];
  STITCH_ASSIGN_OR_RETURN(ValueId magnitude, b.op("Abs", {x}, {}, "abs"));
  STITCH_ASSIGN_OR_RETURN(ValueId negated, b.op("Neg", {magnitude}, {}, "neg"));
  STITCH_ASSIGN_OR_RETURN(ValueId exp, b.op("Exp", {negated}, {}, "exp"));
  ValueId one = b.scalar("one", dtype, 1.0);
  STITCH_ASSIGN_OR_RETURN(ValueId plus_one, b.op("Add", {exp, one}, {}, "plus_one"));
  STITCH_ASSIGN_OR_RETURN(ValueId log, b.op("Log", {plus_one}, {}, "log"));
  STITCH_ASSIGN_OR_RETURN(ValueId positive, b.op("Relu", {x}, {}, "relu"));
  STITCH_RETURN_IF_ERROR(b.op("Add", {positive, log}, {}, "add", node.outputs[0]).status());
  return true;
}

// A chain of Adds (then a Div for Mean). A float16 or bfloat16 chain of more than
// one Add, or any Mean, accumulates in float32: rounding every partial sum to 16
// bits drifts without bound (2000 times 5.0 sums to 8630 in float16) and a partial
// sum may overflow where the result does not.
Result<bool> decompose_sum_or_mean(Graph& graph, const Node& node, Builder& b) {
  if (node.inputs.size() < 2) return false;
  for (ValueId input : node.inputs) {
    if (input == kNoId) return false;
  }
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  bool mean = node.op_type == "Mean";
  if (mean && !dtype_is_float(dtype)) return false;
  DType compute = mean || node.inputs.size() > 2 ? widened(dtype) : dtype;
  ValueId y = compute == dtype ? node.outputs[0] : kNoId;
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId accumulated, b.convert(node.inputs[0], compute, "cast_0"));
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    std::string index = std::to_string(i);
    STITCH_ASSIGN_OR_RETURN(ValueId addend, b.convert(node.inputs[i], compute, "cast_" + index));
    bool last = i + 1 == node.inputs.size() && !mean;
    STITCH_ASSIGN_OR_RETURN(
        accumulated, b.op("Add", {accumulated, addend}, {}, "add_" + index, last ? y : kNoId));
  }
  if (mean) {
    ValueId count = b.scalar("count", compute, static_cast<double>(node.inputs.size()));
    STITCH_ASSIGN_OR_RETURN(accumulated, b.op("Div", {accumulated, count}, {}, "div", y));
  }
  STITCH_RETURN_IF_ERROR(b.finish(accumulated, dtype, node.outputs[0]));
  return true;
}

// Inference BatchNormalization as y = x * a + b per channel. Float16 computes in
// float32: x * a overflows where (x - mean) * a does not, and the cancellation of
// x * a against b magnifies its rounding.
Result<bool> decompose_batch_norm(Graph& graph, const Node& node, Builder& b, int64_t node_opset) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type) || type.rank() < 2 || node.inputs.size() != 5) return false;
  if (node_opset >= 14 && node.int_attribute("training_mode", 0) != 0) return false;
  if (node_opset < 9 && node.int_attribute("spatial", 1) == 0) return false;
  // Training-style outputs (running statistics) stay with the compound op.
  for (size_t slot = 1; slot < node.outputs.size(); ++slot) {
    if (node.outputs[slot] != kNoId) return false;
  }
  for (size_t slot = 1; slot < 5; ++slot) {
    if (graph.value(node.inputs[slot]).type.dtype != type.dtype) return false;
  }
  int64_t rank = type.rank();
  double epsilon = node.float_attribute("epsilon", 1e-5f);
  DType compute = widened(type.dtype);
  ValueId y = compute == type.dtype ? node.outputs[0] : kNoId;
  // The parameters' tensors live behind shared pointers, which adding values
  // leaves in place.
  std::vector<std::shared_ptr<const Tensor>> params;
  for (size_t slot = 1; slot < 5; ++slot) {
    const Value& param = graph.value(node.inputs[slot]);
    if (param.is_initializer() && !param.is_graph_input && !param.constant->external.has_value()) {
      params.push_back(param.constant);
    }
  }
  if (params.size() == 4) {
    // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a, folded now.
    const Tensor& scale = *params[0];
    const Tensor& bias = *params[1];
    const Tensor& mean = *params[2];
    const Tensor& variance = *params[3];
    int64_t channels = scale.num_elements();
    if (bias.num_elements() != channels || mean.num_elements() != channels ||
        variance.num_elements() != channels || (type.dims[1] >= 0 && type.dims[1] != channels)) {
      return false;
    }
    std::vector<double> multiplier(static_cast<size_t>(channels));
    std::vector<double> offset(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      double a = scale.float_at(c) / std::sqrt(variance.float_at(c) + epsilon);
      multiplier[static_cast<size_t>(c)] = a;
      offset[static_cast<size_t>(c)] = bias.float_at(c) - mean.float_at(c) * a;
    }
    std::vector<int64_t> dims = {channels};
    dims.insert(dims.end(), static_cast<size_t>(rank - 2), 1);
    b.remove_compound();
    ValueId a = b.constant("multiplier", Tensor::from_doubles(compute, dims, multiplier));
    ValueId c = b.constant("offset", Tensor::from_doubles(compute, dims, offset));
    STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], compute, "input_cast"));
    STITCH_ASSIGN_OR_RETURN(ValueId scaled, b.op("Mul", {x, a}, {}, "scaled"));
    STITCH_ASSIGN_OR_RETURN(ValueId result, b.op("Add", {scaled, c}, {}, "shifted", y));
    STITCH_RETURN_IF_ERROR(b.finish(result, type.dtype, node.outputs[0]));
    return true;
  }
  b.remove_compound();
  std::vector<ValueId> wide;
  for (size_t slot = 1; slot < 5; ++slot) {
    static constexpr std::string_view kRoles[] = {"scale_cast", "bias_cast", "mean_cast",
                                                  "var_cast"};
    STITCH_ASSIGN_OR_RETURN(ValueId param, b.convert(node.inputs[slot], compute, kRoles[slot - 1]));
    wide.push_back(param);
  }
  ValueId epsilon_value = b.scalar("epsilon", compute, epsilon);
  STITCH_ASSIGN_OR_RETURN(ValueId shifted_variance,
                          b.op("Add", {wide[3], epsilon_value}, {}, "variance_eps"));
  STITCH_ASSIGN_OR_RETURN(ValueId deviation, b.op("Sqrt", {shifted_variance}, {}, "stddev"));
  STITCH_ASSIGN_OR_RETURN(ValueId multiplier, b.op("Div", {wide[0], deviation}, {}, "multiplier"));
  STITCH_ASSIGN_OR_RETURN(ValueId mean_scaled,
                          b.op("Mul", {wide[2], multiplier}, {}, "mean_scaled"));
  STITCH_ASSIGN_OR_RETURN(ValueId offset, b.op("Sub", {wide[1], mean_scaled}, {}, "offset"));
  STITCH_ASSIGN_OR_RETURN(ValueId multiplier_c,
                          b.per_channel(multiplier, rank, compute, "multiplier_c"));
  STITCH_ASSIGN_OR_RETURN(ValueId offset_c, b.per_channel(offset, rank, compute, "offset_c"));
  STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], compute, "input_cast"));
  STITCH_ASSIGN_OR_RETURN(ValueId scaled, b.op("Mul", {x, multiplier_c}, {}, "scaled"));
  STITCH_ASSIGN_OR_RETURN(ValueId result, b.op("Add", {scaled, offset_c}, {}, "shifted", y));
  STITCH_RETURN_IF_ERROR(b.finish(result, type.dtype, node.outputs[0]));
  return true;
}

// InstanceNormalization; float16 computes in float32 ((x - mean)^2 overflows float16
// from |x - mean| = 256).
Result<bool> decompose_instance_norm(Graph& graph, const Node& node, Builder& b) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type) || type.rank() < 3) return false;
  int64_t rank = type.rank();
  DType compute = widened(type.dtype);
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], compute, "input_cast"));
  STITCH_ASSIGN_OR_RETURN(
      Normalized stats, b.normalize(x, axes_from(2, rank), node.float_attribute("epsilon", 1e-5f)));
  STITCH_ASSIGN_OR_RETURN(ValueId result,
                          b.affine(stats.normalized, node.inputs[1], node.inputs[2], rank, "c",
                                   compute == type.dtype ? node.outputs[0] : kNoId));
  STITCH_RETURN_IF_ERROR(b.finish(result, type.dtype, node.outputs[0]));
  return true;
}

// GlobalAveragePool is a row reduction of every spatial axis: ReduceMean over
// [2, rank) with keepdims=1 gives its [N, C, 1, ..., 1] output. (GlobalMaxPool is
// not ReduceMax: the reference and cuDNN skip a NaN where ReduceMax keeps it.)
Result<bool> decompose_global_average_pool(Graph& graph, const Node& node, Builder& b) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type) || type.rank() < 3) return false;
  b.remove_compound();
  STITCH_RETURN_IF_ERROR(
      b.reduce("ReduceMean", node.inputs[0], axes_from(2, type.rank()), "mean", node.outputs[0])
          .status());
  return true;
}

// GroupNormalization. Opset 18 computes in the widened input type; opset 21 its
// stage one in stage_one_type, then scale and bias in the widened input type.
Result<bool> decompose_group_norm(Graph& graph, const Node& node, Builder& b, int64_t node_opset) {
  const TensorType type = graph.value(node.inputs[0]).type;
  if (!known_float(type) || type.rank() < 2) return false;
  int64_t rank = type.rank();
  int64_t channels = type.dims[1];
  int64_t groups = node.int_attribute("num_groups", 0);
  if (channels <= 0 || groups <= 0 || channels % groups != 0) return false;
  // The shape back from [N, G, K] is [0, C, spatial...] (0 copies N), -1 standing
  // for the one unknown spatial dim, if any. K = C/G * spatial is spelled out when
  // known: a -1 next to N = 0 would leave it undetermined.
  std::vector<int64_t> back_shape = {0, channels};
  int unknown = 0;
  int64_t group_size = channels / groups;
  for (int64_t axis = 2; axis < rank; ++axis) {
    int64_t dim = type.dims[static_cast<size_t>(axis)];
    if (dim == 0) return false;
    if (dim < 0) {  // unknown or symbolic
      ++unknown;
    } else {
      group_size *= dim;
    }
    back_shape.push_back(dim < 0 ? -1 : dim);
  }
  if (unknown > 1 || (unknown == 1 && type.dims[0] == 0)) return false;
  bool per_group_affine = node_opset < 21;
  std::optional<DType> stash =
      per_group_affine ? type.dtype : float_dtype_attribute(node, "stash_type", 1);
  if (!stash) return false;
  DType stage_one = stage_one_type(*stash, type.dtype);
  DType affine_type = per_group_affine ? stage_one : widened(type.dtype);
  ValueId y = affine_type == type.dtype ? node.outputs[0] : kNoId;
  b.remove_compound();
  STITCH_ASSIGN_OR_RETURN(ValueId x, b.convert(node.inputs[0], stage_one, "stash_cast"));
  ValueId group_shape = b.int64s("group_shape", {0, groups, unknown == 0 ? group_size : -1});
  STITCH_ASSIGN_OR_RETURN(ValueId grouped, b.op("Reshape", {x, group_shape}, {}, "grouped"));
  STITCH_ASSIGN_OR_RETURN(Normalized stats,
                          b.normalize(grouped, {2}, node.float_attribute("epsilon", 1e-5f)));
  ValueId normalized = stats.normalized;
  ValueId back_shape_value = b.int64s("ungroup_shape", back_shape);
  ValueId result;
  if (per_group_affine) {
    // Opset 18: scale and bias have one entry per group: apply them on [N, G, K].
    STITCH_ASSIGN_OR_RETURN(ValueId biased,
                            b.affine(normalized, node.inputs[1], node.inputs[2], 3, "g"));
    STITCH_ASSIGN_OR_RETURN(result,
                            b.op("Reshape", {biased, back_shape_value}, {}, "ungrouped", y));
  } else {
    STITCH_ASSIGN_OR_RETURN(ValueId ungrouped,
                            b.op("Reshape", {normalized, back_shape_value}, {}, "ungrouped"));
    STITCH_ASSIGN_OR_RETURN(ungrouped, b.convert(ungrouped, affine_type, "normalized_cast"));
    STITCH_ASSIGN_OR_RETURN(result,
                            b.affine(ungrouped, node.inputs[1], node.inputs[2], rank, "c", y));
  }
  STITCH_RETURN_IF_ERROR(b.finish(result, type.dtype, node.outputs[0]));
  return true;
}

// A Transpose of B for Gemm's transB: a transposed copy when B is an initializer
// only this node reads (so the weight is not duplicated), else a Transpose node.
Result<ValueId> transposed(Graph& graph, Builder& b, ValueId value, std::string_view role) {
  const Value& source = graph.value(value);
  if (source.is_initializer() && !source.is_graph_input && source.users.empty() &&
      !source.is_graph_output && !source.constant->external.has_value() &&
      source.constant->dims.size() == 2 && dtype_size(source.constant->dtype) > 0) {
    const Tensor& original = *source.constant;
    int64_t rows = original.dims[0];
    int64_t columns = original.dims[1];
    auto element = static_cast<size_t>(dtype_size(original.dtype));
    Tensor result;
    result.dtype = original.dtype;
    result.dims = {columns, rows};
    result.bytes.resize(original.bytes.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) {
        std::memcpy(result.bytes.data() + static_cast<size_t>(c * rows + r) * element,
                    original.bytes.data() + static_cast<size_t>(r * columns + c) * element,
                    element);
      }
    }
    ValueId copy = b.constant(role, std::move(result));
    graph.remove_value(value);
    return copy;
  }
  return b.op("Transpose", {value}, {Attribute::make_ints("perm", {1, 0})}, role);
}

Result<bool> decompose_gemm(Graph& graph, const Node& node, Builder& b) {
  DType dtype = graph.value(node.inputs[0]).type.dtype;
  if (!dtype_is_float(dtype)) return false;
  double alpha = node.float_attribute("alpha", 1.0f);
  double beta = node.float_attribute("beta", 1.0f);
  bool trans_a = node.int_attribute("transA", 0) != 0;
  bool trans_b = node.int_attribute("transB", 0) != 0;
  ValueId c = input_or_none(node, 2);
  if (c == kNoId) {
    // Without C nothing elementwise is exposed: only a Gemm that is a plain MatMul
    // (B transposed at compile time at most) becomes one.
    const Value& weight = graph.value(node.inputs[1]);
    bool b_foldable = weight.is_initializer() && !weight.is_graph_input &&
                      weight.users.size() == 1 && !weight.constant->external.has_value();
    if (trans_a || alpha != 1.0 || (trans_b && !b_foldable)) return false;
  }
  b.remove_compound();
  ValueId a_value = node.inputs[0];
  ValueId b_value = node.inputs[1];
  if (trans_a) {
    STITCH_ASSIGN_OR_RETURN(a_value, b.op("Transpose", {a_value},
                                          {Attribute::make_ints("perm", {1, 0})}, "transpose_a"));
  }
  if (trans_b) {
    STITCH_ASSIGN_OR_RETURN(b_value, transposed(graph, b, b_value, "transpose_b"));
  }
  bool last = c == kNoId && alpha == 1.0;
  STITCH_ASSIGN_OR_RETURN(ValueId product, b.op("MatMul", {a_value, b_value}, {}, "matmul",
                                                last ? node.outputs[0] : kNoId));
  if (alpha != 1.0) {
    ValueId alpha_value = b.scalar("alpha", dtype, alpha);
    STITCH_ASSIGN_OR_RETURN(product, b.op("Mul", {product, alpha_value}, {}, "alpha_mul",
                                          c == kNoId ? node.outputs[0] : kNoId));
  }
  if (c == kNoId) return true;
  if (beta != 1.0) {
    ValueId beta_value = b.scalar("beta", dtype, beta);
    STITCH_ASSIGN_OR_RETURN(c, b.op("Mul", {c, beta_value}, {}, "beta_mul"));
  }
  STITCH_RETURN_IF_ERROR(b.op("Add", {product, c}, {}, "bias_add", node.outputs[0]).status());
  return true;
}

// A Conv over a single pixel (every spatial input dim and kernel dim 1, no padding,
// group 1: a squeeze-excitation block's 1x1 convolutions after its global pool) is
// a matrix product: y[n, m] = sum_c x[n, c] * w[m, c] + b[m]. It becomes
// Reshape(x, [N, C]) -> MatMul(., W^T) -> Add(., b) -> Reshape([N, M, 1, ...]), a
// fine-grained GEMM that fuses with the pool before it and the gate after it, where
// a cuDNN call would cost a launch for a few thousand multiply-adds. W must be an
// initializer only this node reads (transposed at compile time).
Result<bool> decompose_pixel_conv(Graph& graph, const Node& node, Builder& b) {
  const TensorType x = graph.value(node.inputs[0]).type;
  if (node.inputs.size() < 2 || node.inputs[1] == kNoId || !known_float(x) || !x.is_static() ||
      x.rank() < 3 || node.int_attribute("group", 1) != 1) {
    return false;
  }
  const Value& w = graph.value(node.inputs[1]);
  if (!w.is_initializer() || w.is_graph_input || w.is_graph_output || w.users.size() != 1 ||
      w.constant->external.has_value() || w.constant->dims.size() != x.dims.size() ||
      w.constant->dtype != x.dtype) {
    return false;
  }
  for (size_t d = 2; d < x.dims.size(); ++d) {
    if (x.dims[d] != 1 || w.constant->dims[d] != 1) return false;
  }
  for (int64_t pad : node.ints_attribute("pads", {})) {
    if (pad != 0) return false;
  }
  const std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const int64_t filters = w.constant->dims[0];
  const int64_t channels = w.constant->dims[1];
  if (channels != x.dims[1]) return false;
  const ValueId bias = input_or_none(node, 2);
  Tensor matrix = *w.constant;
  matrix.dims = {filters, channels};
  const ValueId weight = node.inputs[1];
  b.remove_compound();
  graph.remove_value(weight);
  STITCH_ASSIGN_OR_RETURN(
      ValueId rows,
      b.op("Reshape", {node.inputs[0], b.int64s("rows_shape", {x.dims[0], channels})}, {}, "rows"));
  STITCH_ASSIGN_OR_RETURN(
      ValueId product_weight,
      transposed(graph, b, b.constant("weight", std::move(matrix)), "weight_t"));
  STITCH_ASSIGN_OR_RETURN(ValueId product, b.op("MatMul", {rows, product_weight}, {}, "matmul"));
  if (bias != kNoId) {
    STITCH_ASSIGN_OR_RETURN(product, b.op("Add", {product, bias}, {}, "bias_add"));
  }
  std::vector<int64_t> out_shape(x.dims.size(), 1);
  out_shape[0] = x.dims[0];
  out_shape[1] = filters;
  STITCH_RETURN_IF_ERROR(
      b.op("Reshape", {product, b.int64s("out_shape", out_shape)}, {}, "pixels", node.outputs[0])
          .status());
  return true;
}

bool is_compound(const Node& node) {
  static const std::set<std::string, std::less<>> kCompound = {"LayerNormalization",
                                                               "Softmax",
                                                               "LogSoftmax",
                                                               "Gelu",
                                                               "HardSigmoid",
                                                               "HardSwish",
                                                               "Softplus",
                                                               "Sum",
                                                               "Mean",
                                                               "BatchNormalization",
                                                               "InstanceNormalization",
                                                               "GroupNormalization",
                                                               "Gemm",
                                                               "GlobalAveragePool",
                                                               "Conv"};
  return node.domain.empty() && kCompound.contains(node.op_type);
}

Result<bool> decompose(Graph& graph, const Node& node, int64_t default_opset) {
  if (!node.domain.empty()) return false;
  if (node.inputs.empty() || node.inputs[0] == kNoId || node.outputs.empty() ||
      node.outputs[0] == kNoId) {
    return false;
  }
  int64_t node_opset = node.opset_or(default_opset);
  Builder b(graph, node, default_opset);
  const std::string& op = node.op_type;
  if (op == "LayerNormalization") return decompose_layer_norm(graph, node, b);
  if (op == "Softmax" || op == "LogSoftmax") return decompose_softmax(graph, node, b, node_opset);
  if (op == "Gelu") return decompose_gelu(graph, node, b);
  if (op == "HardSigmoid") return decompose_hard_sigmoid(graph, node, b);
  if (op == "HardSwish") return decompose_hard_swish(graph, node, b);
  if (op == "Softplus") return decompose_softplus(graph, node, b);
  if (op == "Sum" || op == "Mean") return decompose_sum_or_mean(graph, node, b);
  if (op == "BatchNormalization") return decompose_batch_norm(graph, node, b, node_opset);
  if (op == "InstanceNormalization") return decompose_instance_norm(graph, node, b);
  if (op == "GroupNormalization") return decompose_group_norm(graph, node, b, node_opset);
  if (op == "Gemm") return decompose_gemm(graph, node, b);
  if (op == "GlobalAveragePool") return decompose_global_average_pool(graph, node, b);
  if (op == "Conv") return decompose_pixel_conv(graph, node, b);
  return false;
}

}  // namespace

Result<bool> decompose_compound_ops(Graph& graph, PassContext& context) {
  bool changed = false;
  // Nodes created here are primitive, so only the ids present at the start are
  // visited.
  NodeId end = graph.node_capacity();
  for (NodeId id = 0; id < end; ++id) {
    if (graph.node(id).dead || !is_compound(graph.node(id))) continue;
    // A copy: creating nodes may move the node storage.
    Node node = graph.node(id);
    STITCH_ASSIGN_OR_RETURN(bool decomposed, decompose(graph, node, context.default_opset));
    changed = changed || decomposed;
  }
  return changed;
}

}  // namespace stitch::ir
