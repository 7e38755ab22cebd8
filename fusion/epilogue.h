// Library-call epilogue candidates: a cuBLASLt matmul or cuDNN convolution that
// applies the pointwise ops after it in the same call, as ONNX Runtime's FusedConv /
// FusedGemm and XLA's cuDNN fused-conv rewriter do, offered to the ILP planner as
// patterns so it chooses between an epilogue and fusing those ops into a generated
// kernel.
//
// Objective: a library call L (a partition node the planner runs as cuBLAS/cuDNN,
// see is_library_call) writes its product and the ops after it read it back. The
// libraries apply an epilogue on the product while it is in registers:
//  - cuBLASLt (MatMul, Gemm): D = act(alpha * A * B + beta * C + bias), with C a
//    full tensor of D's shape (a residual add, beta = 1), bias a vector broadcast
//    along the last dim N (CUBLASLT_EPILOGUE_BIAS), act = RELU or identity: the
//    legacy form of artifact/library_epilogue.h. cuBLASLt's GELU epilogue is the tanh
//    approximation, not the erf GELU the decompose pass opens, so it is not used.
//  - cuDNN (Conv): the legacy form as cudnnConvolutionBiasActivationForward.
//  - cuDNN graphs (a float16/bfloat16 Conv or MatMul, graph_chain in epilogue.cc): any
//    chain of the ops of artifact/library_epilogue.h (bias, per-channel scale, relu,
//    clip, sigmoid, tanh, swish, hardsigmoid, hardswish) as one cuDNN graph of the
//    product and its pointwise ops (cuDNN's runtime fusion); a MatMul's chain that
//    goes beyond cuBLASLt's form becomes a cuDNN call.
//
// The forms accepted. From a library call L (MatMul or Gemm with a float output of
// rank >= 2 -> cuBLASLt; Conv with a float output of rank >= 3 -> cuDNN; static
// shapes), the chain grows L -> e1 -> e2 -> ... while the last value v (initially
// L's output) is no graph output and
//  - v has one use, by e:
//    - Add(v, b) or Add(b, v) with b a bias: b's dims, right-aligned to v's rank,
//      are all 1 except the channel dim (Conv: dim 1; GEMM: the last dim), which
//      equals v's;
//    - Add(v, z) or Add(z, v) with z a residual: z has v's exact dims;
//    - Relu(v);
//    - graphs only: Mul(v, s) or Mul(s, v) with s of a bias's dims (a scale);
//      Clip(v, lo, hi) with constant scalar bounds (or attributes, or none), lo <= hi;
//      Sigmoid(v), Tanh(v), HardSigmoid(v), HardSwish(v);
//  - graphs only: v has two uses, Sigmoid(v) and Mul(v, Sigmoid(v)) (SiLU), and the
//    Sigmoid's output has no other use: one op (swish) of two nodes;
//  - graphs only: v has two uses, the first and last Mul of HardSwish as the decompose
//    pass opens it (ir::opened_hard_swish): one op (hardswish) of five nodes.
// An operand b, z or s is not produced by a chain node. Every op keeps v's shape and
// dtype. The legacy form has at most one bias and one residual and ends at its Relu;
// a graph's chain has no residual add. L's own operands count: Conv's bias input is the chain's
// first bias; Gemm's C is the residual (full shape) or the bias (bias shape, beta =
// 1), and a Gemm whose C is neither starts no chain. Each prefix of the chain with
// >= 2 nodes that does not end inside swish or an opened hardswish is one candidate
// (PatternSource::kEpilogue), scored by cost_model::score_epilogue; a chain is convex
// by construction (every intermediate is read only inside the chain).
//
// Before:
//   %c: f32[1,64,56,56] = Conv(%x, %w, %b) {name="conv"}
//   %s: f32[1,64,56,56] = Add(%c, %skip) {name="add"}
//   %y: f32[1,64,56,56] = Clip(%s, 0, 6) {name="relu6"}
// After (planned): candidates {conv, add} (cuDNN, ["bias", "residual add"]) and
// {conv, add, relu6} (cuDNN, ["bias", "residual add", "clip(0,6)"]); the chosen one
// runs as one cuDNN call.
//
// Must not fire: an intermediate with another consumer or that is a graph output;
// an operand produced by a chain node (Add(c, Relu(c)) is not an epilogue); a bias or
// scale broadcasting along another axis (f32[56] added to a Conv output is per
// column, not per channel); Clip with a computed bound; for cuBLASLt, a second bias
// or residual, an op after Relu or any op but Add and Relu; Gelu, Div, Pow or any
// op not listed; ConvTranspose; non-float outputs.
#pragma once

#include <optional>
#include <vector>

#include "artifact/library_epilogue.h"
#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "fusion/partition.h"
#include "fusion/pattern.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

// A node that runs as a cuBLAS/cuDNN call rather than a generated kernel: a
// partition node that is a GEMM or a convolution.
bool is_library_call(const ir::Node& node, const Partition& partition);

struct EpilogueChain {
  std::vector<ir::NodeId> nodes;  // data order: the library call, then e1, e2, ...
  // Per prefix length k (index k - 1): the library and what the call applies after
  // the product with nodes[0..k) absorbed, in order; L's own bias or C come first.
  // Empty when L starts no chain.
  // nullopt for a prefix that ends inside an op of several nodes (swish's Sigmoid).
  std::vector<std::optional<artifact::LibraryEpilogue>> epilogue_by_length;
};

// The longest epilogue chain from `library_call` (see the header comment); nodes
// holds only the call when nothing can be absorbed. Precondition:
// is_library_call(graph.node(library_call), partition).
EpilogueChain longest_epilogue_chain(const ir::Graph& graph, ir::NodeId library_call);

// Every prefix of >= 2 nodes of every library call's longest chain with a positive
// score, in library-call id order then by length, each with nodes sorted and
// `library` / `epilogue` set. Precondition: `partition` = partition_graph(graph, ...).
std::vector<Pattern> generate_epilogue_candidates(const ir::Graph& graph,
                                                  const Partition& partition,
                                                  const cost_model::DeviceProfile& profile,
                                                  const cost_model::ScoreOptions& score_options);

}  // namespace stitch::fusion
