// A library call as the runtime runs it (artifact/library_call.h).
#include "artifact/library_call.h"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>

#include "ir/core/analysis.h"
#include "ir/core/opened_ops.h"

namespace stitch::artifact {

namespace {

std::optional<BoundEpilogue> refuse(std::string* why_not, std::string why) {
  *why_not = std::move(why);
  return std::nullopt;
}

// `node` is `op_type` of `value` (its first input) and reads `value` nowhere else.
bool is_unary(const ir::Node& node, std::string_view op_type, ir::ValueId value) {
  return node.op_type == op_type && !node.inputs.empty() && node.inputs[0] == value &&
         std::all_of(node.inputs.begin() + 1, node.inputs.end(),
                     [&](ir::ValueId input) { return input != value; });
}

}  // namespace

std::optional<Library> lone_call_library(const ir::Node& node) {
  if (!node.domain.empty()) return std::nullopt;
  const std::string& op = node.op_type;
  if (op == "MatMul" || op == "Gemm") return Library::kCublasLt;
  if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
      op == "GlobalMaxPool") {
    return Library::kCudnn;
  }
  return std::nullopt;
}

std::optional<LibraryEpilogue> lone_call_epilogue(const ir::Graph& graph, const ir::Node& call) {
  std::optional<Library> library = lone_call_library(call);
  if (!library) return std::nullopt;
  LibraryEpilogue epilogue;
  epilogue.library = *library;
  const std::string& op = call.op_type;
  if ((op != "Conv" && op != "Gemm") || call.inputs.size() <= 2 || call.inputs[2] == ir::kNoId) {
    return epilogue;
  }
  if (op == "Conv") {
    epilogue.ops.push_back(EpilogueOp::kBias);
    return epilogue;
  }
  // Gemm's C: the residual when it has the output's dims, a bias along the last dim
  // with beta 1, else no cuBLASLt form.
  if (call.outputs.empty() || call.outputs[0] == ir::kNoId) return std::nullopt;
  const ir::TensorType& v = graph.value(call.outputs[0]).type;
  EpilogueOperandFit fit =
      fit_epilogue_operand(graph.value(call.inputs[2]).type, v, epilogue_channel_axis(call, v));
  if (fit.residual) {
    epilogue.ops.push_back(EpilogueOp::kResidualAdd);
  } else if (fit.bias && call.float_attribute("beta", 1.0f) == 1.0f) {
    epilogue.ops.push_back(EpilogueOp::kBias);
  } else {
    return std::nullopt;
  }
  return epilogue;
}

EpilogueOperandFit fit_epilogue_operand(const ir::TensorType& operand, const ir::TensorType& v,
                                        size_t channel_axis) {
  EpilogueOperandFit fit;
  if (operand.dtype != v.dtype || !operand.is_static() || operand.dims.size() > v.dims.size()) {
    return fit;
  }
  fit.residual = operand.dims == v.dims;
  size_t offset = v.dims.size() - operand.dims.size();
  fit.bias = true;
  for (size_t axis = 0; axis < v.dims.size(); ++axis) {
    int64_t dim = axis >= offset ? operand.dims[axis - offset] : 1;
    int64_t expected = axis == channel_axis ? v.dims[axis] : 1;
    if (dim != expected) fit.bias = false;
  }
  return fit;
}

size_t epilogue_channel_axis(const ir::Node& call, const ir::TensorType& output) {
  if (call.op_type == "Conv") return 1;
  return output.dims.empty() ? 0 : output.dims.size() - 1;
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
      std::optional<std::vector<ir::NodeId>> opened =
          op == EpilogueOp::kGelu ? ir::opened_gelu(body, value, false)
                                  : ir::opened_gelu_tanh(body, value, false);
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
      std::optional<std::vector<ir::NodeId>> opened = ir::opened_hard_swish(body, value, false);
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

}  // namespace stitch::artifact
