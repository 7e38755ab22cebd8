// Folds an inference BatchNormalization into the Conv that feeds it.
#include "ir/passes/fold_conv_batchnorm.h"

#include <cmath>
#include <optional>

namespace stitch::ir {
namespace {

bool is_supported_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16;
}

// A per-channel vector [channels] of the given dtype, else null.
const Tensor* channel_vector(const Graph& graph, ValueId id, DType dtype, int64_t channels) {
  const Tensor* tensor = constant_data(graph, id);
  if (tensor == nullptr || tensor->dtype != dtype ||
      tensor->dims != std::vector<int64_t>{channels}) {
    return nullptr;
  }
  return tensor;
}

bool only_first_output_used(const Graph& graph, const Node& node) {
  for (size_t slot = 1; slot < node.outputs.size(); ++slot) {
    ValueId output = node.outputs[slot];
    if (output == kNoId) continue;
    if (!graph.value(output).users.empty() || graph.value(output).is_graph_output) return false;
  }
  return true;
}

bool fold(Graph& graph, NodeId batch_norm_id) {
  const Node& batch_norm = graph.node(batch_norm_id);
  if (batch_norm.inputs.size() != 5 || batch_norm.outputs.empty()) return false;
  if (batch_norm.int_attribute("training_mode", 0) != 0) return false;
  if (batch_norm.int_attribute("spatial", 1) != 1) return false;
  if (!only_first_output_used(graph, batch_norm)) return false;

  ValueId conv_output = batch_norm.inputs[0];
  const Value& conv_value = graph.value(conv_output);
  if (conv_value.producer == kNoId || conv_value.users.size() != 1 || conv_value.is_graph_output) {
    return false;
  }
  NodeId conv_id = conv_value.producer;
  const Node& conv = graph.node(conv_id);
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2) return false;
  ValueId weight_id = conv.inputs[1];
  const Tensor* weight = constant_data(graph, weight_id);
  if (weight == nullptr || !is_supported_float(weight->dtype) || weight->dims.size() < 3 ||
      graph.value(weight_id).users.size() != 1) {
    return false;
  }
  DType dtype = weight->dtype;
  int64_t channels = weight->dims[0];
  ValueId bias_id = conv.inputs.size() > 2 ? conv.inputs[2] : kNoId;
  const Tensor* bias = nullptr;
  if (bias_id != kNoId) {
    bias = channel_vector(graph, bias_id, dtype, channels);
    if (bias == nullptr) return false;
  }
  const Tensor* scale = channel_vector(graph, batch_norm.inputs[1], dtype, channels);
  const Tensor* shift = channel_vector(graph, batch_norm.inputs[2], dtype, channels);
  const Tensor* mean = channel_vector(graph, batch_norm.inputs[3], dtype, channels);
  const Tensor* variance = channel_vector(graph, batch_norm.inputs[4], dtype, channels);
  if (scale == nullptr || shift == nullptr || mean == nullptr || variance == nullptr) return false;

  double epsilon = batch_norm.float_attribute("epsilon", 1e-5f);
  int64_t per_channel = weight->num_elements() / std::max<int64_t>(channels, 1);
  std::vector<double> folded_weight(static_cast<size_t>(weight->num_elements()));
  std::vector<double> folded_bias(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) {
    double factor = scale->float_at(m) / std::sqrt(variance->float_at(m) + epsilon);
    for (int64_t i = 0; i < per_channel; ++i) {
      int64_t index = m * per_channel + i;
      folded_weight[static_cast<size_t>(index)] = weight->float_at(index) * factor;
    }
    double old_bias = bias != nullptr ? bias->float_at(m) : 0.0;
    folded_bias[static_cast<size_t>(m)] =
        (old_bias - mean->float_at(m)) * factor + shift->float_at(m);
  }

  std::string base = conv.name.empty() ? graph.value(conv_output).name : conv.name;
  ValueId new_weight =
      graph.add_initializer(graph.unique_value_name(base + "/folded_weight"),
                            Tensor::from_doubles(dtype, weight->dims, folded_weight));
  ValueId new_bias = graph.add_initializer(graph.unique_value_name(base + "/folded_bias"),
                                           Tensor::from_doubles(dtype, {channels}, folded_bias));
  std::vector<ValueId> batch_norm_inputs = batch_norm.inputs;
  std::vector<ValueId> batch_norm_outputs = batch_norm.outputs;
  ValueId result = batch_norm_outputs[0];
  inherit_origin(graph, conv_id, {batch_norm_id});
  graph.remove_node(batch_norm_id);
  for (size_t slot = 1; slot < batch_norm_outputs.size(); ++slot) {
    if (batch_norm_outputs[slot] != kNoId) graph.remove_value(batch_norm_outputs[slot]);
  }
  graph.set_input(conv_id, 1, new_weight);
  if (graph.node(conv_id).inputs.size() < 3) graph.node(conv_id).inputs.resize(3, kNoId);
  graph.set_input(conv_id, 2, new_bias);
  graph.set_output(conv_id, 0, result);
  graph.remove_value(conv_output);
  graph.remove_value_if_unused(weight_id);
  graph.remove_value_if_unused(bias_id);
  for (size_t slot = 1; slot < batch_norm_inputs.size(); ++slot) {
    graph.remove_value_if_unused(batch_norm_inputs[slot]);
  }
  return true;
}

}  // namespace

Result<bool> fold_conv_batchnorm(Graph& graph, PassContext& /*context*/) {
  bool changed = false;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.dead || node.op_type != "BatchNormalization" || !node.domain.empty()) continue;
    changed |= fold(graph, id);
  }
  return changed;
}

}  // namespace stitch::ir
