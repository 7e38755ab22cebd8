// The pass interface of the simplification pipeline.
#include "ir/passes/pass.h"

#include <algorithm>
#include <utility>

#include "ir/core/analysis.h"

namespace stitch::ir {

Result<std::vector<NodeId>> AnalysisCache::topological_order(const Graph& graph) {
  if (graph_ != &graph || !order_) {
    STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, ir::topological_order(graph));
    order_ = std::move(order);
    graph_ = &graph;
  }
  return *order_;
}

void AnalysisCache::invalidate() {
  graph_ = nullptr;
  order_.reset();
}

const Tensor* constant_data(const Graph& graph, ValueId id) {
  if (id == kNoId) return nullptr;
  const Value& value = graph.value(id);
  const Tensor* tensor = nullptr;
  if (value.is_initializer() && !value.is_graph_input) {
    tensor = value.constant.get();
  } else if (value.producer != kNoId) {
    const Node& producer = graph.node(value.producer);
    const Attribute* attribute = producer.find_attribute("value");
    if (producer.op_type == "Constant" && producer.domain.empty() && attribute != nullptr) {
      tensor = attribute->tensor.get();
    }
  }
  if (tensor == nullptr || dtype_size(tensor->dtype) == 0) return nullptr;
  if (static_cast<int64_t>(tensor->bytes.size()) !=
      tensor->num_elements() * dtype_size(tensor->dtype)) {
    return nullptr;
  }
  return tensor;
}

bool is_random_op(std::string_view op_type) {
  return op_type == "RandomNormal" || op_type == "RandomNormalLike" || op_type == "RandomUniform" ||
         op_type == "RandomUniformLike" || op_type == "Multinomial" || op_type == "Bernoulli";
}

bool dropout_in_inference(const Graph& graph, const Node& node) {
  if (node.inputs.size() < 3 || node.inputs[2] == kNoId) return true;
  const Tensor* mode = constant_data(graph, node.inputs[2]);
  if (mode != nullptr && mode->num_elements() == 1 && mode->int_at(0) == 0) return true;
  const Tensor* ratio = node.inputs[1] == kNoId ? nullptr : constant_data(graph, node.inputs[1]);
  return ratio != nullptr && ratio->num_elements() == 1 && ratio->float_at(0) == 0.0;
}

bool read_by_subgraph(const Graph& graph, ValueId value) {
  for (const Use& use : graph.value(value).users) {
    if (static_cast<size_t>(use.slot) >= graph.node(use.node).inputs.size()) return true;
  }
  return false;
}

std::optional<std::vector<int64_t>> transpose_permutation(const Graph& graph, const Node& node) {
  if (const Attribute* perm = node.find_attribute("perm"); perm != nullptr) {
    if (perm->kind != AttributeKind::kInts) return std::nullopt;
    return perm->ints;
  }
  int64_t rank = graph.value(node.inputs[0]).type.rank();
  if (rank < 0) return std::nullopt;
  std::vector<int64_t> reversed;
  for (int64_t axis = rank - 1; axis >= 0; --axis) reversed.push_back(axis);
  return reversed;
}

std::optional<std::vector<int64_t>> compose_permutations(const std::vector<int64_t>& first,
                                                         const std::vector<int64_t>& second) {
  if (first.size() != second.size()) return std::nullopt;
  auto rank = static_cast<int64_t>(first.size());
  std::vector<int64_t> composed;
  composed.reserve(first.size());
  for (int64_t axis : second) {
    if (axis < 0 || axis >= rank) return std::nullopt;
    int64_t source = first[static_cast<size_t>(axis)];
    if (source < 0 || source >= rank) return std::nullopt;
    composed.push_back(source);
  }
  return composed;
}

bool is_identity_permutation(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

void replace_with_constants(Graph& graph, NodeId id, std::vector<Tensor> results) {
  std::vector<ValueId> outputs = graph.node(id).outputs;
  std::vector<ValueId> inputs = graph.node(id).inputs;
  graph.remove_node(id);
  for (size_t slot = 0; slot < outputs.size(); ++slot) {
    if (outputs[slot] != kNoId) graph.make_initializer(outputs[slot], std::move(results[slot]));
  }
  for (ValueId input : inputs) graph.remove_value_if_unused(input);
}

void inherit_origin(Graph& graph, NodeId target, const std::vector<NodeId>& sources) {
  std::vector<std::string> merged = graph.node(target).origin;
  for (NodeId source : sources) {
    for (const std::string& name : graph.node(source).origin) {
      if (std::find(merged.begin(), merged.end(), name) == merged.end()) merged.push_back(name);
    }
  }
  graph.node(target).origin = std::move(merged);
}

}  // namespace stitch::ir
