// Scaled dot-product attention after decomposition: the pattern the fused attention
// schedule (emit/schedule.h, "attention") computes in one kernel, as the planner, the
// cost model and the code generator recognise it.
//
// An attention core is
//   S = MatMul(Q, K)                      Q [..., Lq, d], K [..., d, Lk] (K^T as read)
//   x = chain(S)                          ops reading the previous value at their own
//                                         flat index: elementwise ops (their chain operand
//                                         not broadcast; anything not depending on S as
//                                         the other operands: a scale, an additive mask
//                                         or bias, a causal Where) and views (a Swin
//                                         window mask is added in [B, nW, h, N, N]); x
//                                         has S's dims again
//   m = ReduceMax(x, last axis, keepdims)   the Softmax over the last axis,
//   e = Exp(Sub(x, m))                      as the decompose pass opens it
//   z = ReduceSum(e, last axis, keepdims)
//   P = Div(e, z)
//   O = MatMul(P, V)                      V [..., Lk, dv]
// where every value between S and P is read only inside the core (S, the chain and P
// by their one consumer; x by the max and the Sub; e by the sum and the Div), so the
// kernel never writes the Lq x Lk scores to memory. The batch dims of Q, K and V
// broadcast to S's (and O's) batch dims, as MatMul's do. Every value of the core has
// one float type (float32, float16 or bfloat16).
//
// The matcher reports the core's head dims d and dv and takes no limit on them: how
// large a head stitchopt fuses is fusion's policy (fusion/fusion_policy.h,
// fusion::match_fused_attention), not a fact of the graph.
//
// This is the form PyTorch's nn.MultiheadAttention / TransformerEncoder, Hugging
// Face-style BERT/GPT-2/ViT blocks and torch.nn.functional.scaled_dot_product_attention
// export to (opsets 13-17), once the pipeline has folded shapes and opened the Softmax.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::ir {

struct AttentionCore {
  NodeId scores_gemm = kNoId;       // S = MatMul(Q, K)
  std::vector<NodeId> score_chain;  // S -> x, in data order (may be empty: x = S)
  NodeId max = kNoId, shift = kNoId, exp = kNoId, sum = kNoId, normalize = kNoId;
  NodeId output_gemm = kNoId;                         // O = MatMul(P, V)
  ValueId query = kNoId, key = kNoId, value = kNoId;  // the GEMM operands Q, K, V
  ValueId scores = kNoId, logits = kNoId, probs = kNoId, output = kNoId;  // S, x, P, O
  std::vector<int64_t> batch_dims;  // S's and O's dims before the last two
  int64_t batch = 1;                // their product
  int64_t lq = 0, lk = 0, d = 0, dv = 0;
  DType dtype = DType::kFloat32;  // of every value of the core: float32, float16 or bfloat16

  // Every node of the core, sorted by id.
  std::vector<NodeId> nodes() const;
};

// The attention core whose output GEMM is `output_gemm`, whatever its head dims, or
// nullopt (with why in *why_not when given) when that node does not end one.
std::optional<AttentionCore> match_attention_core(const Graph& graph, NodeId output_gemm,
                                                  std::string* why_not = nullptr);

// Every attention core of the graph, whatever its head dims, in node id order of their
// output GEMMs. Cores never share a node (each value between S and P has one reader
// chain).
std::vector<AttentionCore> find_attention_cores(const Graph& graph);

}  // namespace stitch::ir
