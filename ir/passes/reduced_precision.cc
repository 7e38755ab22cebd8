#include "ir/passes/reduced_precision.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "ir/core/analysis.h"
#include "ir/core/attention.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

// The inputs of a converted node read in the reduced type (the rest keep theirs: a
// Resize's roi and scales, a Reshape's shape): kAll for every float input.
constexpr int kAll = -1;

// The conversion rules: ops whose float data may be stored in the reduced type, with
// the input slots that share the output's type. Everything else stays float32.
const std::map<std::string_view, std::vector<int>>& conversion_rules() {
  static const auto* rules = new std::map<std::string_view, std::vector<int>>{
      // Products on tensor cores.
      {"MatMul", {kAll}},
      {"Gemm", {kAll}},
      {"Conv", {kAll}},
      {"ConvTranspose", {kAll}},
      // Elementwise arithmetic and activations (computed in float32 registers).
      {"Add", {kAll}},
      {"Sub", {kAll}},
      {"Mul", {kAll}},
      {"Div", {kAll}},
      {"Pow", {0}},
      {"Max", {kAll}},
      {"Min", {kAll}},
      {"Sum", {kAll}},
      {"Mean", {kAll}},
      {"Neg", {0}},
      {"Abs", {0}},
      {"Relu", {0}},
      {"LeakyRelu", {0}},
      {"PRelu", {kAll}},
      {"Elu", {0}},
      {"Selu", {0}},
      {"Celu", {0}},
      {"Sigmoid", {0}},
      {"HardSigmoid", {0}},
      {"HardSwish", {0}},
      {"Tanh", {0}},
      {"Softplus", {0}},
      {"Softsign", {0}},
      {"Erf", {0}},
      {"Exp", {0}},
      {"Log", {0}},
      {"Sqrt", {0}},
      {"Reciprocal", {0}},
      {"Sin", {0}},
      {"Cos", {0}},
      {"Clip", {kAll}},
      {"Where", {1, 2}},
      {"Identity", {0}},
      {"Dropout", {0}},
      // An integer or bool tensor cast to float32 (a mask, positions) is cast to the
      // reduced type instead; its input is read as it is.
      {"Cast", {}},
      // Data movement.
      {"Reshape", {0}},
      {"Transpose", {0}},
      {"Squeeze", {0}},
      {"Unsqueeze", {0}},
      {"Flatten", {0}},
      {"Expand", {0}},
      {"Slice", {0}},
      {"Gather", {0}},
      {"GatherElements", {0}},
      {"Concat", {kAll}},
      {"Split", {0}},
      {"Tile", {0}},
      {"Pad", {0, 2}},
      {"DepthToSpace", {0}},
      {"SpaceToDepth", {0}},
      {"Resize", {0}},
      // Pooling.
      {"MaxPool", {0}},
      {"AveragePool", {0}},
      {"GlobalAveragePool", {0}},
      {"GlobalMaxPool", {0}}};
  return *rules;
}

// Kept float32 under fp16 for range: exp overflows float16 past 11.09, 1/x and x^y
// leave its 6.1e-5 .. 65504 span easily; bfloat16 has float32's exponent.
bool float16_range_op(std::string_view op) {
  return op == "Exp" || op == "Log" || op == "Pow" || op == "Erf" || op == "Sqrt" ||
         op == "Reciprocal" || op == "Div";
}

bool reads_slot(const std::vector<int>& slots, int slot) {
  for (int s : slots) {
    if (s == kAll || s == slot) return true;
  }
  return false;
}

std::string_view reduced_name(DType dtype) { return dtype == DType::kFloat16 ? "fp16" : "bf16"; }

class Rewriter {
 public:
  Rewriter(Model& model, const ReducedPrecisionOptions& options)
      : graph_(model.graph), options_(options) {}

  Result<ReducedPrecisionResult> run() {
    // A core is converted whole only when none of its values is out of range (a
    // float32-lowest mask): otherwise its nodes follow the rules one by one.
    for (const AttentionCore& core : find_attention_cores(graph_)) {
      const std::vector<NodeId> nodes = core.nodes();
      const bool in_range = std::none_of(nodes.begin(), nodes.end(), [&](NodeId id) {
        return range_reason(graph_.node(id)).has_value();
      });
      if (in_range) in_core_.insert(nodes.begin(), nodes.end());
    }
    if (options_.reduced_io) reduce_graph_inputs();
    STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph_));
    for (NodeId id : order) {
      if (graph_.node(id).dead) continue;
      std::optional<std::string> kept = keep_reason(graph_.node(id));
      if (!has_float32_output(graph_.node(id))) {
        restore_float32_inputs(id);
        continue;
      }
      if (kept) {
        restore_float32_inputs(id);
        ++result_.kept_nodes;
        for (ValueId output : graph_.node(id).outputs) {
          if (output != kNoId && graph_.value(output).type.dtype == DType::kFloat32) {
            result_.kept.push_back({graph_.value(output).name, *kept});
          }
        }
        continue;
      }
      convert(id);
    }
    if (options_.reduced_io) reduce_graph_outputs();
    for (ValueId weight : original_weights_) graph_.remove_value_if_unused(weight);
    return result_;
  }

 private:
  bool has_float32_output(const Node& node) const {
    for (ValueId output : node.outputs) {
      if (output != kNoId && graph_.value(output).type.dtype == DType::kFloat32) return true;
    }
    return false;
  }

  // Why `node` keeps float32 outputs, or nullopt when it is converted.
  std::optional<std::string> keep_reason(const Node& node) const {
    const auto rule = conversion_rules().find(node.op_type);
    // An attention core (ir/core/attention.h) fuses into one kernel only in one type,
    // and that kernel keeps the softmax's max, sum and probabilities in float32
    // registers (never stored): its reductions and range ops are converted with it.
    const bool core = in_core_.count(node.id) > 0;
    if (!core && (!node.domain.empty() || rule == conversion_rules().end())) {
      if (op_kind(node) == OpKind::kReduction) {
        return "a reduction: its result is a statistic (a mean, a variance, a softmax max or "
               "sum) and keeps float32";
      }
      return node.op_type + " has no reduced-precision rule: it keeps float32";
    }
    if (node.op_type == "Cast" && !node.inputs.empty() &&
        dtype_is_float(graph_.value(node.inputs[0]).type.dtype)) {
      return "a Cast from a float type to float32: the model asks for float32";
    }
    const bool fp16 = options_.reduced == DType::kFloat16;
    if (fp16 && !core && float16_range_op(node.op_type)) {
      return node.op_type + " under fp16: its results leave float16's range easily";
    }
    return range_reason(node);
  }

  // Why the values `node` reads or writes keep it float32: read by a subgraph, beyond the
  // reduced type's range on the calibration inputs (above it or, nonzero, below its
  // normal numbers), or a weight beyond it; else nullopt.
  std::optional<std::string> range_reason(const Node& node) const {
    for (ValueId output : node.outputs) {
      if (output == kNoId) continue;
      for (const Use& use : graph_.value(output).users) {
        if (use.slot >= static_cast<int32_t>(graph_.node(use.node).inputs.size())) {
          return "read by a subgraph, whose types are not rewritten";
        }
      }
      if (std::optional<std::string> reason = value_range_reason(output)) return reason;
    }
    for (ValueId input : node.inputs) {
      if (input != kNoId && !weight_in_range(input)) {
        return "reads the weight \"" + graph_.value(input).name + "\", whose values leave " +
               std::string(reduced_name(options_.reduced)) + "'s range (never clamped)";
      }
    }
    return std::nullopt;
  }

  // Why the value `id` cannot be stored in the reduced type: its max |x| on the
  // calibration inputs above a quarter of the type's largest value, or nonzero and
  // below four times its smallest normal; else nullopt.
  std::optional<std::string> value_range_reason(ValueId id) const {
    auto found = options_.max_abs.find(id);
    if (found == options_.max_abs.end()) return std::nullopt;
    char text[200];
    if (!(found->second <= range_limit(options_.reduced))) {
      std::snprintf(text, sizeof(text),
                    "max |x| = %.4g on the calibration inputs, above a quarter of %s's "
                    "largest value: it would overflow",
                    found->second, reduced_name(options_.reduced).data());
      return std::string(text);
    }
    if (found->second > 0 && found->second < underflow_limit(options_.reduced)) {
      std::snprintf(text, sizeof(text),
                    "max |x| = %.4g on the calibration inputs, below four times %s's "
                    "smallest normal value: it would lose its precision or flush to zero",
                    found->second, reduced_name(options_.reduced).data());
      return std::string(text);
    }
    return std::nullopt;
  }

  // False for a float32 initializer with a value beyond the reduced type's largest;
  // each weight is scanned once (the attention-core check and the rules both ask).
  bool weight_in_range(ValueId input) const {
    const Value& value = graph_.value(input);
    if (!value.is_initializer() || value.constant->dtype != DType::kFloat32) return true;
    auto [found, inserted] = weights_in_range_.try_emplace(input, true);
    if (inserted) {
      const Tensor& weight = *value.constant;
      for (int64_t i = 0; i < weight.num_elements() && found->second; ++i) {
        found->second = std::fabs(weight.float_at(i)) <= largest_finite(options_.reduced);
      }
    }
    return found->second;
  }

  // A float32 node reads its reduced inputs through a Cast back to float32.
  void restore_float32_inputs(NodeId id) {
    Node& node = graph_.node(id);
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      const ValueId input = node.inputs[slot];
      if (input == kNoId || !converted_.count(input)) continue;
      graph_.set_input(id, static_cast<int32_t>(slot), cast(input, DType::kFloat32, float32_of_));
    }
  }

  void convert(NodeId id) {
    static const std::vector<int> kDataInput = {0};  // a core's ReduceMax and ReduceSum
    const auto rule = conversion_rules().find(graph_.node(id).op_type);
    const std::vector<int>& slots = rule != conversion_rules().end() ? rule->second : kDataInput;
    for (size_t slot = 0; slot < graph_.node(id).inputs.size(); ++slot) {
      const ValueId input = graph_.node(id).inputs[slot];
      if (input == kNoId) continue;
      if (!reads_slot(slots, static_cast<int>(slot))) {
        // A slot of its own type (a Resize's scales, a Pow's exponent) was float32 in
        // the model: a value this rewrite reduced is read back as float32.
        if (converted_.count(input)) {
          graph_.set_input(id, static_cast<int32_t>(slot),
                           cast(input, DType::kFloat32, float32_of_));
        }
        continue;
      }
      if (graph_.value(input).type.dtype != DType::kFloat32) continue;
      graph_.set_input(id, static_cast<int32_t>(slot), reduced_input(input));
    }
    ++result_.converted_nodes;
    if (graph_.node(id).op_type == "Cast") {
      graph_.node(id).set_attribute(
          Attribute::make_int("to", static_cast<int64_t>(options_.reduced)));
    }
    const std::vector<ValueId> outputs = graph_.node(id).outputs;
    for (size_t slot = 0; slot < outputs.size(); ++slot) {
      const ValueId output = outputs[slot];
      if (output == kNoId || graph_.value(output).type.dtype != DType::kFloat32) continue;
      if (!graph_.value(output).is_graph_output || options_.reduced_io) {
        graph_.value(output).type.dtype = options_.reduced;
        converted_.insert(output);
        result_.reduced_io += graph_.value(output).is_graph_output ? 1 : 0;
        continue;
      }
      // A graph output keeps its type and name: the node writes a reduced value its
      // readers use, and a Cast writes the output.
      TensorType type = graph_.value(output).type;
      type.dtype = options_.reduced;
      const ValueId reduced =
          graph_.add_value(graph_.unique_value_name(graph_.value(output).name + "_" +
                                                    std::string(reduced_name(options_.reduced))),
                           type);
      converted_.insert(reduced);
      const std::vector<Use> users = graph_.value(output).users;
      for (const Use& use : users) graph_.set_input(use.node, use.slot, reduced);
      graph_.set_output(id, static_cast<int32_t>(slot), reduced);
      add_cast(reduced, output, DType::kFloat32);
      float32_of_[reduced] = output;
    }
  }

  // `input` (float32) in the reduced type: a converted copy of a weight, else a Cast.
  ValueId reduced_input(ValueId input) {
    const Value& value = graph_.value(input);
    if (value.is_initializer() && !value.is_graph_input) {
      auto found = reduced_of_.find(input);
      if (found != reduced_of_.end()) return found->second;
      const Tensor& weight = *value.constant;
      std::vector<double> values(static_cast<size_t>(weight.num_elements()));
      for (int64_t i = 0; i < weight.num_elements(); ++i) {
        values[static_cast<size_t>(i)] = weight.float_at(i);
      }
      const ValueId copy = graph_.add_initializer(
          graph_.unique_value_name(value.name + "_" + std::string(reduced_name(options_.reduced))),
          Tensor::from_doubles(options_.reduced, weight.dims, values));
      ++result_.converted_weights;
      original_weights_.insert(input);
      reduced_of_[input] = copy;
      return copy;
    }
    return cast(input, options_.reduced, reduced_of_);
  }

  // reduced_io: float32 graph inputs (those without a default) take the reduced type,
  // unless their values are out of its range; float32 readers read them through a Cast.
  void reduce_graph_inputs() {
    for (ValueId id : graph_.graph_inputs()) {
      Value& value = graph_.value(id);
      if (value.constant != nullptr || value.type.dtype != DType::kFloat32) continue;
      if (std::optional<std::string> reason = value_range_reason(id)) {
        result_.kept.push_back({value.name,
                                "a graph input kept float32 despite "
                                "--io-precision reduced: " +
                                    *reason});
        continue;
      }
      value.type.dtype = options_.reduced;
      converted_.insert(id);
      ++result_.reduced_io;
    }
  }

  // reduced_io: a graph output still float32 (its node was kept float32) is written by a
  // Cast to the reduced type under its name; one a converted node wrote already is.
  void reduce_graph_outputs() {
    for (ValueId id : std::vector<ValueId>(graph_.graph_outputs())) {
      const Value& value = graph_.value(id);
      if (converted_.count(id) || value.producer == kNoId) continue;
      if (value.type.dtype != DType::kFloat32 || float32_of_.count(id)) continue;
      const NodeId producer = value.producer;
      const std::string name = value.name + "_f32";
      const TensorType type = value.type;  // copies: add_value may move the value table
      int32_t slot = 0;
      while (graph_.node(producer).outputs[static_cast<size_t>(slot)] != id) ++slot;
      const ValueId float32 = graph_.add_value(graph_.unique_value_name(name), type);
      const std::vector<Use> users = graph_.value(id).users;
      for (const Use& use : users) graph_.set_input(use.node, use.slot, float32);
      graph_.set_output(producer, slot, float32);
      graph_.value(id).type.dtype = options_.reduced;
      add_cast(float32, id, options_.reduced);
      ++result_.reduced_io;
    }
  }

  // The Cast of `input` to `dtype`, one per value (`cache`).
  ValueId cast(ValueId input, DType dtype, std::map<ValueId, ValueId>& cache) {
    auto found = cache.find(input);
    if (found != cache.end()) return found->second;
    TensorType type = graph_.value(input).type;
    type.dtype = dtype;
    const std::string suffix = dtype == DType::kFloat32 ? "f32" : reduced_name(dtype).data();
    const ValueId output =
        graph_.add_value(graph_.unique_value_name(graph_.value(input).name + "_" + suffix), type);
    add_cast(input, output, dtype);
    if (dtype == options_.reduced) converted_.insert(output);
    cache[input] = output;
    return output;
  }

  void add_cast(ValueId input, ValueId output, DType dtype) {
    const NodeId node =
        graph_.add_node("Cast", {input}, {output}, "", graph_.value(output).name + "_cast");
    graph_.node(node).set_attribute(Attribute::make_int("to", static_cast<int64_t>(dtype)));
    ++result_.casts;
  }

  Graph& graph_;
  const ReducedPrecisionOptions& options_;
  ReducedPrecisionResult result_;
  std::set<NodeId> in_core_;  // nodes of attention cores
  mutable std::map<ValueId, bool> weights_in_range_;
  std::set<ValueId> converted_;  // values this rewrite made reduced
  std::map<ValueId, ValueId> reduced_of_, float32_of_;
  std::set<ValueId> original_weights_;
};

}  // namespace

double largest_finite(DType reduced) {
  return reduced == DType::kFloat16 ? 65504.0 : 3.3895313892515355e38;
}

double smallest_normal(DType reduced) {
  return reduced == DType::kFloat16 ? 6.103515625e-05 : 1.1754943508222875e-38;
}

Result<ReducedPrecisionResult> reduce_precision(Model& model,
                                                const ReducedPrecisionOptions& options) {
  if (options.reduced != DType::kBFloat16 && options.reduced != DType::kFloat16) {
    return Status::internal("reduce_precision: the reduced type must be bf16 or fp16");
  }
  return Rewriter(model, options).run();
}

}  // namespace stitch::ir
