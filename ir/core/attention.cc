// Recognition of attention cores (see attention.h).
#include "ir/core/attention.h"

#include <algorithm>

#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

// The longest score chain followed back from the softmax input (scale, bias, masks).
constexpr int kMaxScoreChain = 8;

class Matcher {
 public:
  Matcher(const Graph& graph, std::string* why_not) : graph_(graph), why_not_(why_not) {}

  std::optional<AttentionCore> match(NodeId output_gemm) {
    AttentionCore core;
    const Node& pv = graph_.node(output_gemm);
    if (pv.dead || pv.op_type != "MatMul" || !is_default_domain(pv.domain) ||
        pv.inputs.size() != 2) {
      return fail("not a MatMul");
    }
    core.output_gemm = output_gemm;
    core.probs = pv.inputs[0];
    core.value = pv.inputs[1];
    core.output = pv.outputs[0];
    // P = Div(e, z), z = ReduceSum(e, last axis), e = Exp(Sub(x, ReduceMax(x, last axis))).
    const Node* normalize = producer(core.probs, "Div");
    if (normalize == nullptr || !only_read_by(core.probs, {output_gemm}))
      return fail("its A operand is not a softmax read only by it");
    core.normalize = normalize->id;
    const ValueId e = normalize->inputs[0];
    const ValueId z = normalize->inputs[1];
    const Node* exp = producer(e, "Exp");
    const Node* sum = producer(z, "ReduceSum");
    if (exp == nullptr || sum == nullptr || sum->inputs[0] != e || !last_axis_kept(*sum) ||
        !only_read_by(z, {normalize->id}) || !only_read_by(e, {sum->id, normalize->id})) {
      return fail("no Exp / ReduceSum over the last axis before the softmax's Div");
    }
    core.exp = exp->id;
    core.sum = sum->id;
    const Node* shift = producer(exp->inputs[0], "Sub");
    if (shift == nullptr || !only_read_by(exp->inputs[0], {exp->id}))
      return fail("the softmax's Exp does not read a Sub");
    core.shift = shift->id;
    core.logits = shift->inputs[0];
    const Node* max = producer(shift->inputs[1], "ReduceMax");
    if (max == nullptr || max->inputs[0] != core.logits || !last_axis_kept(*max) ||
        !only_read_by(shift->inputs[1], {shift->id}) ||
        !only_read_by(core.logits, {max->id, shift->id})) {
      return fail("the softmax does not subtract the ReduceMax of its input over the last axis");
    }
    core.max = max->id;
    // x = chain(S): back through single-reader ops that read the previous value at
    // their own flat index: elementwise ops whose chain operand has their output's
    // dims, and views (Reshape, Squeeze, ...: a window mask added in another shape).
    const int64_t score_elements = graph_.value(core.logits).type.num_elements();
    ValueId current = core.logits;
    for (int step = 0;; ++step) {
      const Value& value = graph_.value(current);
      if (value.producer == kNoId || step > kMaxScoreChain) return fail("no QK^T MatMul found");
      const Node& node = graph_.node(value.producer);
      if (node.op_type == "MatMul" && is_default_domain(node.domain)) {
        core.scores_gemm = node.id;
        core.scores = current;
        break;
      }
      const OpKind kind = op_kind(node);
      if ((kind != OpKind::kElementwise && kind != OpKind::kBroadcast && kind != OpKind::kView) ||
          node.outputs.size() != 1) {
        return fail("node " + node.display_name() +
                    " between QK^T and the softmax is not elementwise or a view");
      }
      // The input continuing the chain: a view's data input, else the one input of the
      // output's dims produced by a MatMul, an elementwise op or a view; exactly one.
      ValueId next = kNoId;
      for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
        const ValueId input = node.inputs[slot];
        if (input == kNoId || (kind == OpKind::kView && slot != 0)) continue;
        const TensorType& type = graph_.value(input).type;
        if (type.num_elements() != score_elements ||
            (kind != OpKind::kView && type.dims != value.type.dims)) {
          continue;
        }
        const NodeId from = graph_.value(input).producer;
        if (from == kNoId) continue;
        const OpKind from_kind = op_kind(graph_.node(from));
        if (from_kind != OpKind::kElementwise && from_kind != OpKind::kBroadcast &&
            from_kind != OpKind::kView && graph_.node(from).op_type != "MatMul") {
          continue;
        }
        if (next != kNoId)
          return fail("node " + node.display_name() + " reads two score-shaped values");
        next = input;
      }
      if (next == kNoId || !only_read_by(next, {node.id}))
        return fail("the scores are read outside the attention");
      core.score_chain.push_back(node.id);
      current = next;
    }
    std::reverse(core.score_chain.begin(), core.score_chain.end());
    const Node& qk = graph_.node(core.scores_gemm);
    if (qk.inputs.size() != 2) return fail("QK^T MatMul without two operands");
    core.query = qk.inputs[0];
    core.key = qk.inputs[1];
    // Shapes: S [B..., Lq, Lk], O [B..., Lq, dv], the same batch dims.
    const std::optional<GemmShape> s_shape = gemm_shape(graph_, qk);
    const std::optional<GemmShape> o_shape = gemm_shape(graph_, pv);
    if (!s_shape || !o_shape) return fail("a GEMM without static shapes");
    if (graph_.value(core.scores).type.rank() < 2 || graph_.value(core.output).type.rank() < 2)
      return fail("rank-1 attention GEMMs");
    if (s_shape->batch_dims != o_shape->batch_dims || o_shape->m != s_shape->m ||
        o_shape->k != s_shape->n) {
      return fail("the two GEMMs' shapes do not chain");
    }
    // The softmax's rows are the scores' rows: the same dims for S, x and P (a view in
    // the chain only reshapes in between).
    const std::vector<int64_t>& score_dims = graph_.value(core.scores).type.dims;
    if (graph_.value(core.probs).type.dims != score_dims ||
        graph_.value(core.logits).type.dims != score_dims) {
      return fail("the softmax does not keep the scores' shape");
    }
    core.batch_dims = s_shape->batch_dims;
    core.batch = s_shape->batch;
    core.lq = s_shape->m;
    core.lk = s_shape->n;
    core.d = s_shape->k;
    core.dv = o_shape->n;
    if (core.lq <= 0 || core.lk <= 0 || core.d <= 0 || core.dv <= 0 || core.batch <= 0)
      return fail("an empty attention");
    // One float type throughout: float32, float16 or bfloat16.
    core.dtype = graph_.value(core.output).type.dtype;
    if (core.dtype != DType::kFloat32 && core.dtype != DType::kFloat16 &&
        core.dtype != DType::kBFloat16) {
      return fail("not float32, float16 or bfloat16");
    }
    for (NodeId id : core.nodes()) {
      for (ValueId output : graph_.node(id).outputs) {
        if (output != kNoId && graph_.value(output).type.dtype != core.dtype)
          return fail("mixed float types");
        if (output != kNoId && output != core.output && graph_.value(output).is_graph_output)
          return fail("an intermediate is a graph output");
      }
    }
    for (ValueId operand : {core.query, core.key, core.value}) {
      if (graph_.value(operand).type.dtype != core.dtype) return fail("mixed float types");
    }
    return core;
  }

 private:
  std::nullopt_t fail(const std::string& why) {
    if (why_not_ != nullptr) *why_not_ = why;
    return std::nullopt;
  }

  const Node* producer(ValueId id, std::string_view op_type) const {
    if (id == kNoId) return nullptr;
    const NodeId from = graph_.value(id).producer;
    if (from == kNoId) return nullptr;
    const Node& node = graph_.node(from);
    if (node.dead || node.op_type != op_type || !is_default_domain(node.domain)) return nullptr;
    return &node;
  }

  // Read by exactly these nodes (each once) and no graph output.
  bool only_read_by(ValueId id, std::vector<NodeId> readers) const {
    const Value& value = graph_.value(id);
    if (value.is_graph_output || value.users.size() != readers.size()) return false;
    std::vector<NodeId> users;
    for (const Use& use : value.users) users.push_back(use.node);
    std::sort(users.begin(), users.end());
    std::sort(readers.begin(), readers.end());
    return users == readers;
  }

  // A reduction over the last axis alone, keeping it.
  bool last_axis_kept(const Node& node) const {
    const TensorType& type = graph_.value(node.inputs[0]).type;
    if (!type.has_shape || type.rank() < 1 || node.int_attribute("keepdims", 1) == 0) return false;
    std::optional<std::vector<int64_t>> axes = reduced_axes(graph_, node, type.rank());
    return axes && *axes == std::vector<int64_t>{type.rank() - 1};
  }

  const Graph& graph_;
  std::string* why_not_;
};

}  // namespace

std::vector<NodeId> AttentionCore::nodes() const {
  std::vector<NodeId> all = score_chain;
  for (NodeId id : {scores_gemm, max, shift, exp, sum, normalize, output_gemm}) all.push_back(id);
  std::sort(all.begin(), all.end());
  return all;
}

std::optional<AttentionCore> match_attention_core(const Graph& graph, NodeId output_gemm,
                                                  std::string* why_not) {
  return Matcher(graph, why_not).match(output_gemm);
}

std::vector<AttentionCore> find_attention_cores(const Graph& graph) {
  std::vector<AttentionCore> cores;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.op_type != "MatMul") continue;
    if (std::optional<AttentionCore> core = match_attention_core(graph, id)) {
      cores.push_back(std::move(*core));
    }
  }
  return cores;
}

}  // namespace stitch::ir
