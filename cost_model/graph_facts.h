// What the score and the estimates read of a graph's nodes and values, shared by
// cost_model.cc (M(V), the pattern scores) and estimate.cc (kernel and plan estimates).
// Internal to cost_model/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/op_registry.h"
#include "ir/core/status.h"

namespace stitch::cost_model::detail {

using ir::Graph;
using ir::kNoId;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Value;
using ir::ValueId;

// Operations per element of an expensive elementwise op, relative to an add.
inline constexpr double kTranscendentalCost = 4.0;
// Flops per input element of a compound reduction (Softmax, LayerNormalization...).
inline constexpr double kCompoundReductionFlops = 4.0;

inline bool is_view(const Node& node) { return ir::op_kind(node) == OpKind::kView; }

inline bool is_constant(const Node& node) {
  return node.op_type == "Constant" && node.domain.empty();
}

// Exp, Log, Tanh, Sigmoid, Erf, Pow, Sqrt, Reciprocal, Sin, Cos, Softplus, ...
bool is_transcendental(const Node& node);

inline bool is_primitive_reduction(const Node& node) {
  return node.op_type.rfind("Reduce", 0) == 0 || node.op_type == "ArgMax" ||
         node.op_type == "ArgMin";
}

inline int64_t value_bytes(const Graph& graph, ValueId value) {
  return std::max<int64_t>(graph.value(value).type.num_bytes(), 0);
}

inline int64_t value_elements(const Graph& graph, ValueId value) {
  return std::max<int64_t>(graph.value(value).type.num_elements(), 0);
}

// Calls `visit` for each value the node reads: its present inputs, then the values
// its subgraphs capture.
template <typename Visit>
void for_each_read(const Node& node, Visit visit) {
  for (ValueId value : node.inputs) {
    if (value != kNoId) visit(value);
  }
  for (ValueId value : node.implicit_inputs) {
    if (value != kNoId) visit(value);
  }
}

inline int64_t max_output_elements(const Graph& graph, const Node& node) {
  int64_t elements = 0;
  for (ValueId output : node.outputs) {
    if (output != kNoId) elements = std::max(elements, value_elements(graph, output));
  }
  return elements;
}

// Sorts `nodes` and checks that they are distinct live nodes of `graph` (a pattern's or
// a group's precondition).
inline void sort_and_check_nodes(const Graph& graph, std::vector<NodeId>& nodes) {
  std::sort(nodes.begin(), nodes.end());
  STITCH_CHECK(std::adjacent_find(nodes.begin(), nodes.end()) == nodes.end())
      << "duplicate node in a pattern";
  for (NodeId id : nodes) {
    STITCH_CHECK(id >= 0 && id < graph.node_capacity() && !graph.node(id).dead)
        << "pattern node " << id << " is not a live node";
  }
}

// Why the node cannot be costed (an unknown shape, dtype size or reduction
// layout), or "" when it can.
std::string unknown_shape_reason(const Graph& graph, const Node& node);

}  // namespace stitch::cost_model::detail
