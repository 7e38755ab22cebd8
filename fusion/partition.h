// Partition: which nodes never fuse, and the role of every other node in the
// multi-step substitution heuristic (FusionStitching 4.2.1).
//
// FusionStitching's Algorithm 1 collapses everything between adjacent "partition
// ops" into one pattern, and runs once per step of a growing partition set: first
// only the ops that never fuse, then also batched GEMMs, then column reductions,
// then scalar reductions. `partition_graph` gives each node the role that decides
// at which step it joins the partition set:
//
//   kPartition       never fuses: Opaque ops (global pools before decomposition,
//                    Resize, control flow, unknown ops), Shape/Size metadata ops, ops
//                    outside the default domain, dense Conv (cuDNN), a stencil that
//                    fusion::stencil_refusal refuses (a grouped Conv over 16 channels
//                    per group, a MaxPool whose Indices are read: cuDNN), a GEMM with 2*m*n*k*batch
//                    >= large_gemm_flops or over the fused 64x64x64 (cuBLAS) unless it belongs to
//                    an attention core (ir/core/attention.h: the fused attention tiles any size),
//                    any op with an input or output whose shape is not static, and dead nodes.
//                    `decisions[id]` says why.
//   kBatchedGemm     a MatMul/Gemm below the threshold or of an attention core,
//                    batched or 2-D ("fine-grained gemm": it fuses through block
//                    composition or the fused attention).
//   kColumnReduction a reduction over non-innermost axes (ir::classify_reduction).
//   kScalarReduction a reduction over every axis.
//   kFusible         everything else: elementwise, broadcast, injective, view,
//                    stencils (depthwise/grouped Conv, MaxPool, AveragePool), row
//                    reductions, compound ops not yet decomposed, and Constant nodes
//                    (they launch nothing).
//
// Example: x -> MatMul[1024x1024x1024] -> Add -> ReduceSum(axes=[0]) -> Relu gives
// MatMul kPartition ("large GEMM (m×n×k = 1024×1024×1024, 2.1 GFLOP): cuBLAS library
// call"), Add kFusible, ReduceSum kColumnReduction, Relu kFusible.
//
// Precondition: shapes were inferred (ir/shapes/shape_inference.h). Decisions allow
// fusion for every role but kPartition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/fusion_decision.h"
#include "ir/core/attention.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

enum class NodeRole { kFusible, kBatchedGemm, kColumnReduction, kScalarReduction, kPartition };
std::string_view node_role_name(NodeRole role);  // "fusible", "batched_gemm", ...

struct PartitionOptions {
  // A GEMM at least this big (2*m*n*k*batch flops) is a library call: 2 GFLOP.
  int64_t large_gemm_flops = 2LL << 30;
  // GEMMs of attention cores fuse at any size (the fused attention schedule).
  bool attention = true;
  // Stencils (depthwise/grouped Conv, MaxPool, AveragePool) are generated; false: they
  // run as cuDNN calls, as before issue 17 (the CLI's --no-stencils).
  bool stencils = true;
};

struct Partition {
  std::vector<NodeRole> roles;            // by node id; kPartition for dead nodes too
  std::vector<FusionDecision> decisions;  // by node id: forbid(why) for kPartition, else allow
  // Every attention core of the graph that the policy fuses (fusion::fused_attention_cores),
  // found once for the candidates whether or not options.attention exempts their GEMMs.
  std::vector<ir::AttentionCore> attention_cores;

  NodeRole role(ir::NodeId node) const { return roles[static_cast<size_t>(node)]; }
  const FusionDecision& decision(ir::NodeId node) const {
    return decisions[static_cast<size_t>(node)];
  }
};

Partition partition_graph(const ir::Graph& graph, const PartitionOptions& options);

}  // namespace stitch::fusion
