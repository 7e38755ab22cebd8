// Library-call epilogue candidates: cuBLASLt / cuDNN calls with bias, residual add
// and ReLU applied in the call.
#include "fusion/epilogue.h"

#include <algorithm>
#include <cstddef>

#include "ir/core/op_registry.h"

namespace stitch::fusion {
namespace {

// What an operand of an epilogue Add can be for the chain value `v` of the call.
struct OperandFit {
  bool bias = false;      // broadcasts along the channel dim only
  bool residual = false;  // exactly v's dims
};

OperandFit fit_operand(const ir::TensorType& operand, const ir::TensorType& v,
                       size_t channel_axis) {
  OperandFit fit;
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

const ir::TensorType* output_type(const ir::Graph& graph, const ir::Node& node) {
  if (node.outputs.empty() || node.outputs[0] == ir::kNoId) return nullptr;
  return &graph.value(node.outputs[0]).type;
}

// The axis a bias runs along: Conv's channels (dim 1), a GEMM's last dim N.
size_t channel_axis_of(const ir::Node& call, const ir::TensorType& output) {
  if (call.op_type == "Conv") return 1;
  return output.dims.empty() ? 0 : output.dims.size() - 1;
}

}  // namespace

bool is_library_call(const ir::Node& node, const Partition& partition) {
  if (partition.role(node.id) != NodeRole::kPartition) return false;
  // A stencil the partition refused (a grouped Conv over the channel limit, a MaxPool
  // with Indices) runs in cuDNN too.
  ir::OpKind kind = ir::op_kind(node);
  return kind == ir::OpKind::kGemm || kind == ir::OpKind::kConv || kind == ir::OpKind::kStencil;
}

EpilogueChain longest_epilogue_chain(const ir::Graph& graph, ir::NodeId library_call) {
  const ir::Node& call = graph.node(library_call);
  EpilogueChain chain;
  chain.nodes = {library_call};
  const ir::TensorType* v = output_type(graph, call);
  if (v == nullptr || !v->is_static() || !ir::dtype_is_float(v->dtype) || !call.domain.empty()) {
    return chain;
  }
  if (call.op_type == "Conv" ? v->dims.size() < 3 : v->dims.size() < 2) return chain;
  std::optional<LibraryEpilogue> epilogue = call_epilogue(graph, call);
  // Pooling has no epilogue form.
  if (!epilogue || (epilogue->library == Library::kCudnn && call.op_type != "Conv")) return chain;
  const size_t channel_axis = channel_axis_of(call, *v);
  bool have_bias = false;
  bool have_residual = false;
  for (EpilogueOp op : epilogue->ops) {
    have_bias = have_bias || op == EpilogueOp::kBias;
    have_residual = have_residual || op == EpilogueOp::kResidualAdd;
  }
  chain.epilogue_by_length.push_back(*epilogue);

  ir::ValueId value = call.outputs[0];
  while (true) {
    const ir::Value& current = graph.value(value);
    if (current.is_graph_output || current.users.size() != 1) break;
    const ir::Node& next = graph.node(current.users[0].node);
    const ir::TensorType* next_type = output_type(graph, next);
    if (!next.domain.empty() || next.outputs.size() != 1 || next_type == nullptr ||
        next_type->dtype != v->dtype || next_type->dims != v->dims) {
      break;
    }
    if (next.op_type == "Relu") {
      epilogue->ops.push_back(EpilogueOp::kRelu);
    } else if (next.op_type == "Add" && next.inputs.size() == 2) {
      ir::ValueId operand = next.inputs[current.users[0].slot == 0 ? 1 : 0];
      if (operand == ir::kNoId) break;
      ir::NodeId producer = graph.value(operand).producer;
      if (std::find(chain.nodes.begin(), chain.nodes.end(), producer) != chain.nodes.end()) break;
      OperandFit fit = fit_operand(graph.value(operand).type, *v, channel_axis);
      if (fit.residual && !have_residual) {
        have_residual = true;
        epilogue->ops.push_back(EpilogueOp::kResidualAdd);
      } else if (fit.bias && !have_bias) {
        have_bias = true;
        epilogue->ops.push_back(EpilogueOp::kBias);
      } else {
        break;
      }
    } else {
      break;
    }
    chain.nodes.push_back(next.id);
    chain.epilogue_by_length.push_back(*epilogue);
    if (next.op_type == "Relu") break;
    value = next.outputs[0];
  }
  return chain;
}

std::optional<LibraryEpilogue> call_epilogue(const ir::Graph& graph, const ir::Node& call) {
  if (!call.domain.empty()) return std::nullopt;
  LibraryEpilogue epilogue;
  const std::string& op = call.op_type;
  if (op == "MatMul" || op == "Gemm") {
    epilogue.library = Library::kCublasLt;
  } else if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
             op == "GlobalMaxPool") {
    epilogue.library = Library::kCudnn;
  } else {
    return std::nullopt;
  }
  if ((op != "Conv" && op != "Gemm") || call.inputs.size() <= 2 || call.inputs[2] == ir::kNoId) {
    return epilogue;
  }
  if (op == "Conv") {
    epilogue.ops.push_back(EpilogueOp::kBias);
    return epilogue;
  }
  // Gemm's C: the residual when it has the output's dims, a bias along the last dim
  // with beta 1, else no cuBLASLt form.
  const ir::TensorType* v = output_type(graph, call);
  if (v == nullptr) return std::nullopt;
  OperandFit fit = fit_operand(graph.value(call.inputs[2]).type, *v, channel_axis_of(call, *v));
  if (fit.residual) {
    epilogue.ops.push_back(EpilogueOp::kResidualAdd);
  } else if (fit.bias && call.float_attribute("beta", 1.0f) == 1.0f) {
    epilogue.ops.push_back(EpilogueOp::kBias);
  } else {
    return std::nullopt;
  }
  return epilogue;
}

std::vector<Pattern> generate_epilogue_candidates(const ir::Graph& graph,
                                                  const Partition& partition,
                                                  const cost_model::DeviceProfile& profile,
                                                  const cost_model::ScoreOptions& score_options) {
  std::vector<Pattern> patterns;
  for (ir::NodeId id : graph.node_ids()) {
    if (!is_library_call(graph.node(id), partition)) continue;
    EpilogueChain chain = longest_epilogue_chain(graph, id);
    for (size_t length = 2; length <= chain.nodes.size(); ++length) {
      std::vector<ir::NodeId> prefix(chain.nodes.begin(),
                                     chain.nodes.begin() + static_cast<std::ptrdiff_t>(length));
      cost_model::PatternScore score =
          cost_model::score_epilogue(graph, prefix, profile, score_options);
      if (!score.feasible || score.score_us <= 0) continue;
      Pattern pattern;
      std::sort(prefix.begin(), prefix.end());
      pattern.nodes = std::move(prefix);
      pattern.source = PatternSource::kEpilogue;
      pattern.score_us = score.score_us;
      pattern.bytes_saved = score.bytes_saved;
      pattern.epilogue = chain.epilogue_by_length[length - 1];
      patterns.push_back(std::move(pattern));
    }
  }
  return patterns;
}

}  // namespace stitch::fusion
