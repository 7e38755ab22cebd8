// Library-call epilogue candidates: cuBLASLt / cuDNN calls with bias, residual add
// and ReLU applied in the call.
#include "fusion/epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "artifact/library_call.h"
#include "ir/core/op_registry.h"
#include "ir/core/opened_ops.h"

namespace stitch::fusion {

// The recorded types (artifact/library_epilogue.h) this file decides, and the library
// calls' own rules (artifact/library_call.h) it grows chains from.
using artifact::EpilogueOp;
using artifact::Library;
using artifact::LibraryEpilogue;

namespace {

const ir::TensorType* output_type(const ir::Graph& graph, const ir::Node& node) {
  if (node.outputs.empty() || node.outputs[0] == ir::kNoId) return nullptr;
  return &graph.value(node.outputs[0]).type;
}

// The unary op `node` applies to v (its first input) as an epilogue op: Clip with
// constant bounds, Sigmoid, Tanh, HardSigmoid, HardSwish; nullopt for anything else.
std::optional<EpilogueOp> pointwise_op(const ir::Graph& graph, const ir::Node& node,
                                       ir::ValueId v) {
  const std::string& type = node.op_type;
  if (node.inputs.empty() || node.inputs[0] != v) return std::nullopt;
  if (type == "Clip") {
    // Opset >= 11: bounds as (optional) inputs; before, as attributes.
    float lower = node.float_attribute("min", std::numeric_limits<float>::lowest());
    float upper = node.float_attribute("max", std::numeric_limits<float>::max());
    for (size_t slot = 1; slot < node.inputs.size() && slot < 3; ++slot) {
      if (node.inputs[slot] == ir::kNoId) continue;
      if (node.inputs[slot] == v) return std::nullopt;
      std::optional<float> bound = ir::scalar_constant(graph, node.inputs[slot]);
      if (!bound) return std::nullopt;
      (slot == 1 ? lower : upper) = *bound;
    }
    if (node.inputs.size() > 3 || std::isnan(lower) || std::isnan(upper) || lower > upper) {
      return std::nullopt;
    }
    return EpilogueOp::clip(lower, upper);
  }
  if (node.inputs.size() != 1) return std::nullopt;
  if (type == "Sigmoid") return EpilogueOp::kSigmoid;
  if (type == "Tanh") return EpilogueOp::kTanh;
  if (type == "HardSwish") return EpilogueOp::kHardSwish;
  if (type == "HardSigmoid") {
    float alpha = node.float_attribute("alpha", 0.2f);
    float beta = node.float_attribute("beta", 0.5f);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) return std::nullopt;
    return EpilogueOp::hard_sigmoid(alpha, beta);
  }
  return std::nullopt;
}

// Whether cuDNN may run `call` with an epilogue that is not the legacy form, as one
// graph through its runtime fusion engines. As XLA's cuDNN fused-conv rewriter
// decides (IsSuitableForCudnnRuntimeFusion): a float16 or bfloat16 Conv with an even
// number of input and output channels (the engines read 32 bits at a time). A MatMul
// likewise, float16/bfloat16 with even K and N, its B either a matrix or batched as
// A (the runtime's [B,M,K] x [B or 1,K,N]). float32 keeps the legacy form: the
// engines compute it in TF32, which misses the float32 reference by more than 1e-5.
// The chain then has no residual add (cuDNN's runtime fusion is slow with a side
// input, as XLA notes).
bool graph_chain(const ir::Graph& graph, const ir::Node& call) {
  if ((call.op_type != "Conv" && call.op_type != "MatMul") || call.inputs.size() < 2 ||
      call.inputs[0] == ir::kNoId || call.inputs[1] == ir::kNoId) {
    return false;
  }
  const ir::TensorType* output = output_type(graph, call);
  const ir::TensorType& left = graph.value(call.inputs[0]).type;
  const ir::TensorType& right = graph.value(call.inputs[1]).type;
  if (output == nullptr ||
      (output->dtype != ir::DType::kFloat16 && output->dtype != ir::DType::kBFloat16) ||
      !left.is_static() || !right.is_static() || left.dims.size() < 2 || right.dims.size() < 2) {
    return false;
  }
  if (call.op_type == "Conv") return right.dims[0] % 2 == 0 && right.dims[1] % 2 == 0;
  const int64_t k = right.dims[right.dims.size() - 2];
  const int64_t n = right.dims.back();
  const bool same_batch = right.dims.size() == 2 ||
                          (left.dims.size() == right.dims.size() &&
                           std::equal(left.dims.begin(), left.dims.end() - 2, right.dims.begin()));
  return k % 2 == 0 && n % 2 == 0 && same_batch;
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
  std::optional<LibraryEpilogue> epilogue = artifact::lone_call_epilogue(graph, call);
  // Pooling has no epilogue form.
  if (!epilogue || (epilogue->library == Library::kCudnn && call.op_type != "Conv")) return chain;
  // cuBLASLt and cudnnConvolutionBiasActivationForward take the legacy form; a Conv or
  // MatMul whose cuDNN runtime fusion can run it (graph_chain) also any other chain of
  // the ops, as one cuDNN graph.
  const bool graph_ok = graph_chain(graph, call);
  const size_t channel_axis = artifact::epilogue_channel_axis(call, *v);
  chain.epilogue_by_length.push_back(*epilogue);
  // The epilogue with `op` appended, if the library applies it.
  auto accepts = [&](EpilogueOp op) {
    LibraryEpilogue longer = *epilogue;
    longer.ops.push_back(op);
    const bool residual = std::find(longer.ops.begin(), longer.ops.end(),
                                    EpilogueOp::kResidualAdd) != longer.ops.end();
    return longer.legacy_form() || (graph_ok && !residual);
  };

  // `node` keeps v's dims and dtype in one output and is plain ONNX.
  auto keeps_type = [&](const ir::Node& node) {
    const ir::TensorType* type = output_type(graph, node);
    return node.domain.empty() && node.outputs.size() == 1 && type != nullptr &&
           type->dtype == v->dtype && type->dims == v->dims;
  };
  ir::ValueId value = call.outputs[0];
  while (true) {
    const ir::Value& current = graph.value(value);
    if (current.is_graph_output) break;
    std::optional<EpilogueOp> op;
    std::vector<ir::NodeId> added;
    if (current.users.size() == 2 && graph_ok) {
      // Swish: Sigmoid(v) read only by Mul(v, Sigmoid(v)).
      const ir::Node& first = graph.node(current.users[0].node);
      const ir::Node& second = graph.node(current.users[1].node);
      const ir::Node& sigmoid = first.op_type == "Sigmoid" ? first : second;
      const ir::Node& mul = first.op_type == "Sigmoid" ? second : first;
      if (sigmoid.op_type == "Sigmoid" && mul.op_type == "Mul" && sigmoid.id != mul.id &&
          keeps_type(sigmoid) && keeps_type(mul) && mul.inputs.size() == 2) {
        const ir::Value& gate = graph.value(sigmoid.outputs[0]);
        const bool reads_both = (mul.inputs[0] == value && mul.inputs[1] == gate.id) ||
                                (mul.inputs[1] == value && mul.inputs[0] == gate.id);
        if (reads_both && !gate.is_graph_output && gate.users.size() == 1) {
          op = EpilogueOp::kSwish;
          added = {sigmoid.id, mul.id};
        }
      }
      // HardSwish as the decompose pass opens it, GELU (erf) as PyTorch exports it or
      // the decompose pass opens it (five nodes each).
      auto opened_op = [&](const std::optional<std::vector<ir::NodeId>>& opened, EpilogueOp as) {
        if (!op && opened && std::all_of(opened->begin(), opened->end(), [&](ir::NodeId id) {
              return keeps_type(graph.node(id));
            })) {
          op = as;
          added = *opened;
        }
      };
      opened_op(ir::opened_hard_swish(graph, value, true), EpilogueOp::kHardSwish);
      opened_op(ir::opened_gelu(graph, value, true), EpilogueOp::kGelu);
    } else if (current.users.size() >= 3 && graph_ok) {
      // GELU's tanh approximation (GPT-2's), as PyTorch exports it or the decompose
      // pass opens it: v read by its cube, the inner Add and the tail's first Mul.
      std::optional<std::vector<ir::NodeId>> opened = ir::opened_gelu_tanh(graph, value, true);
      if (opened && std::all_of(opened->begin(), opened->end(),
                                [&](ir::NodeId id) { return keeps_type(graph.node(id)); })) {
        op = EpilogueOp::kGeluTanh;
        added = *opened;
      }
    } else if (current.users.size() == 1) {
      const ir::Node& next = graph.node(current.users[0].node);
      if (!keeps_type(next)) break;
      added = {next.id};
      const std::string& type = next.op_type;
      if (type == "Relu" && next.inputs.size() == 1) {
        op = EpilogueOp::kRelu;
      } else if ((type == "Add" || type == "Mul") && next.inputs.size() == 2) {
        ir::ValueId operand = next.inputs[current.users[0].slot == 0 ? 1 : 0];
        if (operand == ir::kNoId || operand == value) break;
        ir::NodeId producer = graph.value(operand).producer;
        if (std::find(chain.nodes.begin(), chain.nodes.end(), producer) != chain.nodes.end()) break;
        auto fit = artifact::fit_epilogue_operand(graph.value(operand).type, *v, channel_axis);
        if (type == "Mul") {
          if (fit.bias) op = EpilogueOp::kScale;
        } else if (fit.residual && accepts(EpilogueOp::kResidualAdd)) {
          op = EpilogueOp::kResidualAdd;
        } else if (fit.bias) {
          op = EpilogueOp::kBias;
        }
      } else {
        op = pointwise_op(graph, next, value);
      }
    }
    if (!op || !accepts(*op)) break;
    epilogue->ops.push_back(*op);
    // A MatMul's chain beyond cuBLASLt's epilogues is a cuDNN graph.
    if (!epilogue->legacy_form()) epilogue->library = Library::kCudnn;
    for (size_t i = 0; i < added.size(); ++i) {
      chain.nodes.push_back(added[i]);
      // A prefix that ends inside an op of several nodes is no chain.
      chain.epilogue_by_length.push_back(
          i + 1 == added.size() ? std::optional<LibraryEpilogue>(*epilogue) : std::nullopt);
    }
    value = graph.node(added.back()).outputs[0];
  }
  return chain;
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
      if (!chain.epilogue_by_length[length - 1]) continue;
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
      pattern.epilogue = *chain.epilogue_by_length[length - 1];
      patterns.push_back(std::move(pattern));
    }
  }
  return patterns;
}

}  // namespace stitch::fusion
