// A library call's body: the opened compound ops' matchers and the epilogue binding.
#include "fusion/library_epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <utility>

#include "ir/core/analysis.h"

namespace stitch::fusion {

// The recorded types (artifact/library_epilogue.h) this file decides and matches.
using artifact::epilogue_op_name;
using artifact::EpilogueOp;
using artifact::EpilogueOpKind;
using artifact::LibraryEpilogue;

namespace {

std::optional<BoundEpilogue> refuse(std::string* why_not, std::string why) {
  *why_not = std::move(why);
  return std::nullopt;
}

// The op node of kind `op_type` whose one output is read by the chain's next op.
bool is_unary(const ir::Node& node, std::string_view op_type, ir::ValueId value) {
  return node.op_type == op_type && !node.inputs.empty() && node.inputs[0] == value &&
         std::all_of(node.inputs.begin() + 1, node.inputs.end(),
                     [&](ir::ValueId input) { return input != value; });
}

// The one node reading `value` (which is no graph output), or nullptr.
const ir::Node* only_user(const ir::Graph& graph, ir::ValueId value) {
  const ir::Value& read = graph.value(value);
  if (read.is_graph_output || read.users.size() != 1) return nullptr;
  return &graph.node(read.users[0].node);
}

// `node` is `op_type` of `value` and one other operand, in either order, with one
// output; the other operand, or kNoId.
ir::ValueId binary_with(const ir::Node& node, std::string_view op_type, ir::ValueId value) {
  if (node.op_type != op_type || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1 || node.outputs[0] == ir::kNoId) {
    return ir::kNoId;
  }
  if (node.inputs[0] == value && node.inputs[1] != value) return node.inputs[1];
  if (node.inputs[1] == value && node.inputs[0] != value) return node.inputs[0];
  return ir::kNoId;
}

// An initializer of one float element within `tolerance` of `expected`.
bool scalar_near(const ir::Graph& graph, ir::ValueId value, double expected,
                 double tolerance = 1e-3) {
  std::optional<float> constant = scalar_constant(graph, value);
  return constant && std::abs(static_cast<double>(*constant) - expected) <= tolerance;
}

}  // namespace

std::optional<std::vector<ir::NodeId>> opened_hard_swish(const ir::Graph& graph, ir::ValueId v,
                                                         bool constants) {
  const ir::Value& input = graph.value(v);
  if (input.is_graph_output || input.users.size() != 2) return std::nullopt;
  // The first Mul reads v and k1; the last reads v and the Max.
  for (int first = 0; first < 2; ++first) {
    const ir::Node& scaled = graph.node(input.users[static_cast<size_t>(first)].node);
    const ir::Node& gated = graph.node(input.users[static_cast<size_t>(1 - first)].node);
    const ir::ValueId k1 = binary_with(scaled, "Mul", v);
    if (k1 == ir::kNoId || scaled.id == gated.id) continue;
    const ir::Node* shifted = only_user(graph, scaled.outputs[0]);
    const ir::ValueId k2 = shifted ? binary_with(*shifted, "Add", scaled.outputs[0]) : ir::kNoId;
    const ir::Node* lower = k2 != ir::kNoId ? only_user(graph, shifted->outputs[0]) : nullptr;
    const ir::ValueId k3 = lower ? binary_with(*lower, "Min", shifted->outputs[0]) : ir::kNoId;
    const ir::Node* upper = k3 != ir::kNoId ? only_user(graph, lower->outputs[0]) : nullptr;
    const ir::ValueId k4 = upper ? binary_with(*upper, "Max", lower->outputs[0]) : ir::kNoId;
    if (k4 == ir::kNoId || only_user(graph, upper->outputs[0]) != &gated ||
        binary_with(gated, "Mul", v) != upper->outputs[0]) {
      continue;
    }
    if (constants && !(scalar_near(graph, k1, 1.0 / 6.0) && scalar_near(graph, k2, 0.5) &&
                       scalar_near(graph, k3, 1.0) && scalar_near(graph, k4, 0.0))) {
      return std::nullopt;
    }
    return std::vector<ir::NodeId>{scaled.id, shifted->id, lower->id, upper->id, gated.id};
  }
  return std::nullopt;
}

namespace {

// The tail both GELU forms share after their inner function t (Erf or Tanh) of v:
// %p = Add(t, one), then PyTorch's %m = Mul(v, %p), %y = Mul(%m, half), or the
// decompose pass's %h = Mul(v, half), %y = Mul(%h, %p). `side` is the reader of v
// outside the inner chain (%m's or %h's node).
struct GeluTail {
  ir::NodeId plus = ir::kNoId, side = ir::kNoId, last = ir::kNoId;
  ir::ValueId one = ir::kNoId, half = ir::kNoId;
};
std::optional<GeluTail> gelu_tail(const ir::Graph& graph, ir::ValueId v, ir::ValueId t,
                                  const ir::Node& side) {
  const ir::Node* plus = only_user(graph, t);
  const ir::ValueId one = plus ? binary_with(*plus, "Add", t) : ir::kNoId;
  const ir::Node* after = one != ir::kNoId ? only_user(graph, plus->outputs[0]) : nullptr;
  if (after == nullptr) return std::nullopt;
  const ir::ValueId p = plus->outputs[0];
  const ir::Node* last = nullptr;
  ir::ValueId half = ir::kNoId;
  if (after->id == side.id) {
    // PyTorch: Mul(v, %p), then Mul(%m, half).
    if (binary_with(side, "Mul", v) != p) return std::nullopt;
    last = only_user(graph, side.outputs[0]);
    if (last != nullptr) half = binary_with(*last, "Mul", side.outputs[0]);
  } else {
    // The decompose pass: Mul(v, half), then Mul(%h, %p).
    half = binary_with(side, "Mul", v);
    if (half == ir::kNoId || only_user(graph, side.outputs[0]) != after ||
        binary_with(*after, "Mul", p) != side.outputs[0]) {
      return std::nullopt;
    }
    last = after;
  }
  if (last == nullptr || half == ir::kNoId) return std::nullopt;
  return GeluTail{plus->id, side.id, last->id, one, half};
}

// `node` is the one-input, one-output ONNX op `op_type` of `value`.
bool unary_of(const ir::Node& node, std::string_view op_type, ir::ValueId value) {
  return node.op_type == op_type && node.domain.empty() && node.inputs.size() == 1 &&
         node.inputs[0] == value && node.outputs.size() == 1 && node.outputs[0] != ir::kNoId;
}

}  // namespace

std::optional<std::vector<ir::NodeId>> opened_gelu(const ir::Graph& graph, ir::ValueId v,
                                                   bool constants) {
  const ir::Value& input = graph.value(v);
  if (input.is_graph_output || input.users.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const ir::Node& scaled = graph.node(input.users[static_cast<size_t>(first)].node);
    const ir::Node& side = graph.node(input.users[static_cast<size_t>(1 - first)].node);
    if (scaled.id == side.id) continue;
    // v / sqrt(2): Mul(v, 1/sqrt(2)) or Div(v, sqrt(2)).
    ir::ValueId k1 = binary_with(scaled, "Mul", v);
    const bool divided =
        k1 == ir::kNoId && binary_with(scaled, "Div", v) != ir::kNoId && scaled.inputs[0] == v;
    if (divided) k1 = scaled.inputs[1];
    if (k1 == ir::kNoId) continue;
    const ir::Node* erf = only_user(graph, scaled.outputs[0]);
    if (erf == nullptr || !unary_of(*erf, "Erf", scaled.outputs[0])) continue;
    std::optional<GeluTail> tail = gelu_tail(graph, v, erf->outputs[0], side);
    if (!tail) continue;
    if (constants && !(scalar_near(graph, k1, divided ? std::sqrt(2.0) : 1.0 / std::sqrt(2.0)) &&
                       scalar_near(graph, tail->one, 1.0) && scalar_near(graph, tail->half, 0.5))) {
      return std::nullopt;
    }
    return std::vector<ir::NodeId>{scaled.id, erf->id, tail->plus, tail->side, tail->last};
  }
  return std::nullopt;
}

std::optional<std::vector<ir::NodeId>> opened_gelu_tanh(const ir::Graph& graph, ir::ValueId v,
                                                        bool constants) {
  const ir::Value& input = graph.value(v);
  if (input.is_graph_output) return std::nullopt;
  std::vector<ir::NodeId> readers;  // distinct nodes reading v
  for (const ir::Use& use : input.users) {
    if (std::find(readers.begin(), readers.end(), use.node) == readers.end()) {
      readers.push_back(use.node);
    }
  }
  if (readers.size() != 3 && readers.size() != 4) return std::nullopt;
  for (ir::NodeId first : readers) {
    // v^3: Pow(v, 3), or Mul(Mul(v, v), v).
    const ir::Node& head = graph.node(first);
    std::vector<ir::NodeId> cube_nodes = {head.id};
    ir::ValueId cube = ir::kNoId, exponent = ir::kNoId;
    if (head.op_type == "Pow" && head.domain.empty() && head.inputs.size() == 2 &&
        head.inputs[0] == v && head.inputs[1] != v && head.outputs.size() == 1) {
      cube = head.outputs[0];
      exponent = head.inputs[1];
    } else if (head.op_type == "Mul" && head.domain.empty() && head.inputs.size() == 2 &&
               head.inputs[0] == v && head.inputs[1] == v && head.outputs.size() == 1 &&
               head.outputs[0] != ir::kNoId) {
      const ir::Node* cubed = only_user(graph, head.outputs[0]);
      if (cubed == nullptr || binary_with(*cubed, "Mul", head.outputs[0]) != v) continue;
      cube = cubed->outputs[0];
      cube_nodes.push_back(cubed->id);
    }
    if (cube == ir::kNoId) continue;
    // sqrt(2 / pi) * (v + 0.044715 v^3), then Tanh.
    const ir::Node* cube_scaled = only_user(graph, cube);
    const ir::ValueId k1 = cube_scaled ? binary_with(*cube_scaled, "Mul", cube) : ir::kNoId;
    const ir::Node* inner = k1 != ir::kNoId ? only_user(graph, cube_scaled->outputs[0]) : nullptr;
    if (inner == nullptr || binary_with(*inner, "Add", cube_scaled->outputs[0]) != v) continue;
    const ir::Node* scaled = only_user(graph, inner->outputs[0]);
    const ir::ValueId k2 = scaled ? binary_with(*scaled, "Mul", inner->outputs[0]) : ir::kNoId;
    const ir::Node* tanh = k2 != ir::kNoId ? only_user(graph, scaled->outputs[0]) : nullptr;
    if (tanh == nullptr || !unary_of(*tanh, "Tanh", scaled->outputs[0])) continue;
    // The one reader of v left: the tail's first Mul.
    std::vector<ir::NodeId> chain = cube_nodes;
    chain.push_back(inner->id);
    const ir::Node* side = nullptr;
    for (ir::NodeId reader : readers) {
      if (std::find(chain.begin(), chain.end(), reader) != chain.end()) continue;
      if (side != nullptr) return std::nullopt;  // v has another reader
      side = &graph.node(reader);
    }
    if (side == nullptr || readers.size() != cube_nodes.size() + 2) continue;
    std::optional<GeluTail> tail = gelu_tail(graph, v, tanh->outputs[0], *side);
    if (!tail) continue;
    // 0.044715 within 1e-4 (float16 rounds it by 2.2e-5), the others within 1e-3.
    if (constants && !((exponent == ir::kNoId || scalar_near(graph, exponent, 3.0)) &&
                       scalar_near(graph, k1, 0.044715, 1e-4) &&
                       scalar_near(graph, k2, std::sqrt(2.0 / std::numbers::pi)) &&
                       scalar_near(graph, tail->one, 1.0) && scalar_near(graph, tail->half, 0.5))) {
      return std::nullopt;
    }
    std::vector<ir::NodeId> nodes = cube_nodes;
    for (ir::NodeId id :
         {cube_scaled->id, inner->id, scaled->id, tanh->id, tail->plus, tail->side, tail->last}) {
      nodes.push_back(id);
    }
    return nodes;
  }
  return std::nullopt;
}

std::optional<float> scalar_constant(const ir::Graph& graph, ir::ValueId value) {
  const ir::Value& constant = graph.value(value);
  if (!constant.is_initializer()) return std::nullopt;
  const ir::Tensor& tensor = *constant.constant;
  if (!ir::dtype_is_float(tensor.dtype) || tensor.num_elements() != 1 ||
      static_cast<int64_t>(tensor.bytes.size()) != ir::dtype_size(tensor.dtype)) {
    return std::nullopt;
  }
  return static_cast<float>(tensor.float_at(0));
}

std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body, const LibraryEpilogue& epilogue,
                                           std::string* why_not) {
  Result<std::vector<ir::NodeId>> order = ir::topological_order(body);
  if (!order.is_ok()) return refuse(why_not, order.status().message());
  if (order->empty()) return refuse(why_not, "the step's body is empty");
  BoundEpilogue bound;
  bound.call = (*order)[0];
  bound.operands.assign(epilogue.ops.size(), ir::kNoId);
  const ir::Node& call = body.node(bound.call);
  if (call.outputs.empty() || call.outputs[0] == ir::kNoId) {
    return refuse(why_not, call.display_name() + " has no first output");
  }
  // Records operand `operand` of op `index` and the legacy view.
  auto bind_operand = [&](size_t index, ir::ValueId operand) {
    bound.operands[index] = operand;
    const EpilogueOp op = epilogue.ops[index];
    if (op == EpilogueOp::kBias && bound.bias == ir::kNoId) bound.bias = operand;
    if (op == EpilogueOp::kResidualAdd && bound.residual == ir::kNoId) bound.residual = operand;
  };
  size_t next = 0;  // the next op of `epilogue` to bind
  if (call.inputs.size() > 2 && call.inputs[2] != ir::kNoId) {
    if (epilogue.ops.empty() ||
        (epilogue.ops[0] != EpilogueOp::kBias && epilogue.ops[0] != EpilogueOp::kResidualAdd)) {
      return refuse(why_not, call.display_name() +
                                 "'s third operand is not the epilogue's bias or residual add");
    }
    bind_operand(0, call.inputs[2]);
    if (bound.residual != ir::kNoId && call.op_type == "Gemm") {
      bound.residual_scale = call.float_attribute("beta", 1.0f);
    }
    ++next;
  }
  ir::ValueId value = call.outputs[0];
  for (size_t i = 1; i < order->size(); ++i) {
    const ir::Node& node = body.node((*order)[i]);
    if (next >= epilogue.ops.size()) {
      return refuse(why_not, node.display_name() + " is not one of the epilogue's " +
                                 std::to_string(epilogue.ops.size()) + " ops");
    }
    const size_t index = next++;
    const EpilogueOp op = epilogue.ops[index];
    const std::string op_name = epilogue_op_name(op);
    if (!node.domain.empty() || node.outputs.size() != 1 || node.outputs[0] == ir::kNoId) {
      return refuse(why_not, node.display_name() + " is not an epilogue op with one output");
    }
    auto mismatch = [&] {
      return refuse(why_not, node.display_name() + " is not the epilogue's " + op_name +
                                 " of the previous output");
    };
    if (op.reads_operand()) {
      const char* op_type = op == EpilogueOp::kScale ? "Mul" : "Add";
      if (node.op_type != op_type || node.inputs.size() != 2 ||
          (node.inputs[0] == value) == (node.inputs[1] == value)) {
        return mismatch();
      }
      bind_operand(index, node.inputs[node.inputs[0] == value ? 1 : 0]);
    } else if (op.kind == EpilogueOpKind::kSwish) {
      // Sigmoid(v), then Mul(v, Sigmoid(v)) in either operand order.
      if (!is_unary(node, "Sigmoid", value) || node.inputs.size() != 1 || i + 1 >= order->size()) {
        return mismatch();
      }
      const ir::Node& mul = body.node((*order)[++i]);
      const ir::ValueId gate = node.outputs[0];
      if (!mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2 ||
          mul.outputs.size() != 1 || mul.outputs[0] == ir::kNoId ||
          !((mul.inputs[0] == value && mul.inputs[1] == gate) ||
            (mul.inputs[0] == gate && mul.inputs[1] == value))) {
        return refuse(why_not, mul.display_name() + " is not the swish's Mul of " +
                                   node.display_name() + " and its input");
      }
      value = mul.outputs[0];
      continue;
    } else if (op == EpilogueOp::kGelu || op == EpilogueOp::kGeluTanh) {
      // The nodes of the opened form, in any topological order the body has.
      std::optional<std::vector<ir::NodeId>> opened = op == EpilogueOp::kGelu
                                                          ? opened_gelu(body, value, false)
                                                          : opened_gelu_tanh(body, value, false);
      if (!opened || i + opened->size() > order->size()) return mismatch();
      std::vector<ir::NodeId> next(
          order->begin() + static_cast<std::ptrdiff_t>(i),
          order->begin() + static_cast<std::ptrdiff_t>(i + opened->size()));
      std::vector<ir::NodeId> expected = *opened;
      std::sort(next.begin(), next.end());
      std::sort(expected.begin(), expected.end());
      if (next != expected) return mismatch();
      i += opened->size() - 1;
      value = body.node(opened->back()).outputs[0];
      continue;
    } else if (op == EpilogueOp::kHardSwish && node.op_type != "HardSwish") {
      // The five nodes of the opened form, in topological order.
      std::optional<std::vector<ir::NodeId>> opened = opened_hard_swish(body, value, false);
      if (!opened || (*opened)[0] != node.id || i + 4 >= order->size()) return mismatch();
      for (size_t k = 1; k < opened->size(); ++k) {
        if ((*order)[i + k] != (*opened)[k]) return mismatch();
      }
      i += 4;
      value = body.node(opened->back()).outputs[0];
      continue;
    } else {
      static constexpr std::pair<EpilogueOpKind, std::string_view> kUnary[] = {
          {EpilogueOpKind::kRelu, "Relu"},
          {EpilogueOpKind::kClip, "Clip"},
          {EpilogueOpKind::kSigmoid, "Sigmoid"},
          {EpilogueOpKind::kTanh, "Tanh"},
          {EpilogueOpKind::kHardSigmoid, "HardSigmoid"},
          {EpilogueOpKind::kHardSwish, "HardSwish"}};
      bool matched = false;
      for (auto [kind, op_type] : kUnary) {
        if (kind == op.kind && is_unary(node, op_type, value)) matched = true;
      }
      // Only Clip has operands besides v (its bounds, which the op carries).
      if (!matched || (op.kind != EpilogueOpKind::kClip && node.inputs.size() != 1)) {
        return mismatch();
      }
      if (op == EpilogueOp::kRelu) bound.relu = true;
    }
    value = node.outputs[0];
  }
  if (next != epilogue.ops.size()) {
    return refuse(why_not, "the epilogue names " + std::to_string(epilogue.ops.size()) +
                               " ops, the step's body applies " + std::to_string(next));
  }
  bound.output = value;
  return bound;
}

}  // namespace stitch::fusion
