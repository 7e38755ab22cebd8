// The opened compound ops' matchers (ir/core/opened_ops.h).
#include "ir/core/opened_ops.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <string_view>

namespace stitch::ir {

namespace {

// The one node reading `value` (which is no graph output), or nullptr.
const Node* only_user(const Graph& graph, ValueId value) {
  const Value& read = graph.value(value);
  if (read.is_graph_output || read.users.size() != 1) return nullptr;
  return &graph.node(read.users[0].node);
}

// `node` is `op_type` of `value` and one other operand, in either order, with one
// output; the other operand, or kNoId.
ValueId binary_with(const Node& node, std::string_view op_type, ValueId value) {
  if (node.op_type != op_type || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1 || node.outputs[0] == kNoId) {
    return kNoId;
  }
  if (node.inputs[0] == value && node.inputs[1] != value) return node.inputs[1];
  if (node.inputs[1] == value && node.inputs[0] != value) return node.inputs[0];
  return kNoId;
}

// An initializer of one float element within `tolerance` of `expected`.
bool scalar_near(const Graph& graph, ValueId value, double expected, double tolerance = 1e-3) {
  std::optional<float> constant = scalar_constant(graph, value);
  return constant && std::abs(static_cast<double>(*constant) - expected) <= tolerance;
}

}  // namespace

std::optional<std::vector<NodeId>> opened_hard_swish(const Graph& graph, ValueId v,
                                                     bool constants) {
  const Value& input = graph.value(v);
  if (input.is_graph_output || input.users.size() != 2) return std::nullopt;
  // The first Mul reads v and k1; the last reads v and the Max.
  for (int first = 0; first < 2; ++first) {
    const Node& scaled = graph.node(input.users[static_cast<size_t>(first)].node);
    const Node& gated = graph.node(input.users[static_cast<size_t>(1 - first)].node);
    const ValueId k1 = binary_with(scaled, "Mul", v);
    if (k1 == kNoId || scaled.id == gated.id) continue;
    const Node* shifted = only_user(graph, scaled.outputs[0]);
    const ValueId k2 = shifted ? binary_with(*shifted, "Add", scaled.outputs[0]) : kNoId;
    const Node* lower = k2 != kNoId ? only_user(graph, shifted->outputs[0]) : nullptr;
    const ValueId k3 = lower ? binary_with(*lower, "Min", shifted->outputs[0]) : kNoId;
    const Node* upper = k3 != kNoId ? only_user(graph, lower->outputs[0]) : nullptr;
    const ValueId k4 = upper ? binary_with(*upper, "Max", lower->outputs[0]) : kNoId;
    if (k4 == kNoId || only_user(graph, upper->outputs[0]) != &gated ||
        binary_with(gated, "Mul", v) != upper->outputs[0]) {
      continue;
    }
    if (constants && !(scalar_near(graph, k1, 1.0 / 6.0) && scalar_near(graph, k2, 0.5) &&
                       scalar_near(graph, k3, 1.0) && scalar_near(graph, k4, 0.0))) {
      return std::nullopt;
    }
    return std::vector<NodeId>{scaled.id, shifted->id, lower->id, upper->id, gated.id};
  }
  return std::nullopt;
}

namespace {

// The tail both GELU forms share after their inner function t (Erf or Tanh) of v:
// %p = Add(t, one), then PyTorch's %m = Mul(v, %p), %y = Mul(%m, half), or the
// decompose pass's %h = Mul(v, half), %y = Mul(%h, %p). `side` is the reader of v
// outside the inner chain (%m's or %h's node).
struct GeluTail {
  NodeId plus = kNoId, side = kNoId, last = kNoId;
  ValueId one = kNoId, half = kNoId;
};
std::optional<GeluTail> gelu_tail(const Graph& graph, ValueId v, ValueId t, const Node& side) {
  const Node* plus = only_user(graph, t);
  const ValueId one = plus ? binary_with(*plus, "Add", t) : kNoId;
  const Node* after = one != kNoId ? only_user(graph, plus->outputs[0]) : nullptr;
  if (after == nullptr) return std::nullopt;
  const ValueId p = plus->outputs[0];
  const Node* last = nullptr;
  ValueId half = kNoId;
  if (after->id == side.id) {
    // PyTorch: Mul(v, %p), then Mul(%m, half).
    if (binary_with(side, "Mul", v) != p) return std::nullopt;
    last = only_user(graph, side.outputs[0]);
    if (last != nullptr) half = binary_with(*last, "Mul", side.outputs[0]);
  } else {
    // The decompose pass: Mul(v, half), then Mul(%h, %p).
    half = binary_with(side, "Mul", v);
    if (half == kNoId || only_user(graph, side.outputs[0]) != after ||
        binary_with(*after, "Mul", p) != side.outputs[0]) {
      return std::nullopt;
    }
    last = after;
  }
  if (last == nullptr || half == kNoId) return std::nullopt;
  return GeluTail{plus->id, side.id, last->id, one, half};
}

// `node` is the one-input, one-output ONNX op `op_type` of `value`.
bool unary_of(const Node& node, std::string_view op_type, ValueId value) {
  return node.op_type == op_type && node.domain.empty() && node.inputs.size() == 1 &&
         node.inputs[0] == value && node.outputs.size() == 1 && node.outputs[0] != kNoId;
}

}  // namespace

std::optional<std::vector<NodeId>> opened_gelu(const Graph& graph, ValueId v, bool constants) {
  const Value& input = graph.value(v);
  if (input.is_graph_output || input.users.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const Node& scaled = graph.node(input.users[static_cast<size_t>(first)].node);
    const Node& side = graph.node(input.users[static_cast<size_t>(1 - first)].node);
    if (scaled.id == side.id) continue;
    // v / sqrt(2): Mul(v, 1/sqrt(2)) or Div(v, sqrt(2)).
    ValueId k1 = binary_with(scaled, "Mul", v);
    const bool divided =
        k1 == kNoId && binary_with(scaled, "Div", v) != kNoId && scaled.inputs[0] == v;
    if (divided) k1 = scaled.inputs[1];
    if (k1 == kNoId) continue;
    const Node* erf = only_user(graph, scaled.outputs[0]);
    if (erf == nullptr || !unary_of(*erf, "Erf", scaled.outputs[0])) continue;
    std::optional<GeluTail> tail = gelu_tail(graph, v, erf->outputs[0], side);
    if (!tail) continue;
    if (constants && !(scalar_near(graph, k1, divided ? std::sqrt(2.0) : 1.0 / std::sqrt(2.0)) &&
                       scalar_near(graph, tail->one, 1.0) && scalar_near(graph, tail->half, 0.5))) {
      return std::nullopt;
    }
    return std::vector<NodeId>{scaled.id, erf->id, tail->plus, tail->side, tail->last};
  }
  return std::nullopt;
}

std::optional<std::vector<NodeId>> opened_gelu_tanh(const Graph& graph, ValueId v, bool constants) {
  const Value& input = graph.value(v);
  if (input.is_graph_output) return std::nullopt;
  std::vector<NodeId> readers;  // distinct nodes reading v
  for (const Use& use : input.users) {
    if (std::find(readers.begin(), readers.end(), use.node) == readers.end()) {
      readers.push_back(use.node);
    }
  }
  if (readers.size() != 3 && readers.size() != 4) return std::nullopt;
  for (NodeId first : readers) {
    // v^3: Pow(v, 3), or Mul(Mul(v, v), v).
    const Node& head = graph.node(first);
    std::vector<NodeId> cube_nodes = {head.id};
    ValueId cube = kNoId, exponent = kNoId;
    if (head.op_type == "Pow" && head.domain.empty() && head.inputs.size() == 2 &&
        head.inputs[0] == v && head.inputs[1] != v && head.outputs.size() == 1) {
      cube = head.outputs[0];
      exponent = head.inputs[1];
    } else if (head.op_type == "Mul" && head.domain.empty() && head.inputs.size() == 2 &&
               head.inputs[0] == v && head.inputs[1] == v && head.outputs.size() == 1 &&
               head.outputs[0] != kNoId) {
      const Node* cubed = only_user(graph, head.outputs[0]);
      if (cubed == nullptr || binary_with(*cubed, "Mul", head.outputs[0]) != v) continue;
      cube = cubed->outputs[0];
      cube_nodes.push_back(cubed->id);
    }
    if (cube == kNoId) continue;
    // sqrt(2 / pi) * (v + 0.044715 v^3), then Tanh.
    const Node* cube_scaled = only_user(graph, cube);
    const ValueId k1 = cube_scaled ? binary_with(*cube_scaled, "Mul", cube) : kNoId;
    const Node* inner = k1 != kNoId ? only_user(graph, cube_scaled->outputs[0]) : nullptr;
    if (inner == nullptr || binary_with(*inner, "Add", cube_scaled->outputs[0]) != v) continue;
    const Node* scaled = only_user(graph, inner->outputs[0]);
    const ValueId k2 = scaled ? binary_with(*scaled, "Mul", inner->outputs[0]) : kNoId;
    const Node* tanh = k2 != kNoId ? only_user(graph, scaled->outputs[0]) : nullptr;
    if (tanh == nullptr || !unary_of(*tanh, "Tanh", scaled->outputs[0])) continue;
    // The one reader of v left: the tail's first Mul.
    std::vector<NodeId> chain = cube_nodes;
    chain.push_back(inner->id);
    const Node* side = nullptr;
    for (NodeId reader : readers) {
      if (std::find(chain.begin(), chain.end(), reader) != chain.end()) continue;
      if (side != nullptr) return std::nullopt;  // v has another reader
      side = &graph.node(reader);
    }
    if (side == nullptr || readers.size() != cube_nodes.size() + 2) continue;
    std::optional<GeluTail> tail = gelu_tail(graph, v, tanh->outputs[0], *side);
    if (!tail) continue;
    // 0.044715 within 1e-4 (float16 rounds it by 2.2e-5), the others within 1e-3.
    if (constants && !((exponent == kNoId || scalar_near(graph, exponent, 3.0)) &&
                       scalar_near(graph, k1, 0.044715, 1e-4) &&
                       scalar_near(graph, k2, std::sqrt(2.0 / std::numbers::pi)) &&
                       scalar_near(graph, tail->one, 1.0) && scalar_near(graph, tail->half, 0.5))) {
      return std::nullopt;
    }
    std::vector<NodeId> nodes = cube_nodes;
    for (NodeId id :
         {cube_scaled->id, inner->id, scaled->id, tanh->id, tail->plus, tail->side, tail->last}) {
      nodes.push_back(id);
    }
    return nodes;
  }
  return std::nullopt;
}

std::optional<float> scalar_constant(const Graph& graph, ValueId value) {
  const Value& constant = graph.value(value);
  if (!constant.is_initializer()) return std::nullopt;
  const Tensor& tensor = *constant.constant;
  if (!dtype_is_float(tensor.dtype) || tensor.num_elements() != 1 ||
      static_cast<int64_t>(tensor.bytes.size()) != dtype_size(tensor.dtype)) {
    return std::nullopt;
  }
  return static_cast<float>(tensor.float_at(0));
}

}  // namespace stitch::ir
