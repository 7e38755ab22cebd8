// Partition: node roles for the multi-step substitution heuristic.
#include "fusion/partition.h"

#include <cstdio>
#include <optional>

#include "cost_model/cost_model.h"
#include "fusion/fusion_policy.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::fusion {
namespace {

std::string format_gflop(int64_t flops) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", static_cast<double>(flops) / 1e9);
  return buffer;
}

// The first present input or output whose shape is not static, as "input \"x\" is
// f32[?,128]", or nullopt when every one is static.
std::optional<std::string> non_static_value(const ir::Graph& graph, const ir::Node& node) {
  auto describe = [&](const char* role, ir::ValueId id) {
    const ir::Value& value = graph.value(id);
    return std::string(role) + " \"" + value.name + "\" is " + ir::to_string(value.type);
  };
  for (ir::ValueId input : node.inputs) {
    if (input != ir::kNoId && !graph.value(input).type.is_static()) return describe("input", input);
  }
  for (ir::ValueId output : node.outputs) {
    if (output != ir::kNoId && !graph.value(output).type.is_static()) {
      return describe("output", output);
    }
  }
  return std::nullopt;
}

// Role of one live node, and for kPartition why it never fuses.
// `in_attention`: the node is a GEMM of an attention core (ir/core/attention.h).
std::pair<NodeRole, FusionDecision> classify(const ir::Graph& graph, const ir::Node& node,
                                             const PartitionOptions& options, bool in_attention) {
  if (!node.domain.empty()) {
    return {NodeRole::kPartition,
            FusionDecision::forbid("op " + node.op_type + " of domain \"" + node.domain +
                                   "\": runs as its own kernel")};
  }
  if (node.op_type == "Constant") return {NodeRole::kFusible, FusionDecision::allow()};
  if (node.op_type == "Shape" || node.op_type == "Size") {
    return {NodeRole::kPartition,
            FusionDecision::forbid("metadata op " + node.op_type +
                                   ": reads no tensor data, runs on the host")};
  }
  ir::OpKind kind = ir::op_kind(node);
  if (kind == ir::OpKind::kOpaque) {
    return {NodeRole::kPartition,
            FusionDecision::forbid("Opaque op " + node.op_type + ": runs as its own kernel")};
  }
  if (std::optional<std::string> unknown = non_static_value(graph, node)) {
    return {NodeRole::kPartition,
            FusionDecision::forbid("unknown shape (" + *unknown +
                                   "): give static shapes with --input-shape")};
  }
  if (kind == ir::OpKind::kConv) {
    return {NodeRole::kPartition, FusionDecision::forbid("Conv: cuDNN library call")};
  }
  if (kind == ir::OpKind::kStencil) {
    // Depthwise and small-group convolutions, pooling: generated stencils.
    if (!options.stencils) {
      return {NodeRole::kPartition,
              FusionDecision::forbid(node.op_type + ": stencils off (--no-stencils): cuDNN "
                                                    "library call")};
    }
    if (std::optional<std::string> refusal = fusion::stencil_refusal(graph, node)) {
      return {NodeRole::kPartition, FusionDecision::forbid(*refusal)};
    }
    return {NodeRole::kFusible, FusionDecision::allow()};
  }
  if (kind == ir::OpKind::kGemm && in_attention) {
    // The fused attention schedule tiles both GEMMs over the keys: no size limit.
    return {NodeRole::kBatchedGemm, FusionDecision::allow()};
  }
  if (kind == ir::OpKind::kGemm) {
    // Shapes are static here (checked above).
    const ir::GemmShape shape = ir::gemm_shape(graph, node).value_or(ir::GemmShape{});
    // A GEMM the cost model would refuse to fuse is a library call here too, so the
    // candidates never grow around it and the report names it as one.
    bool over_fused_limit = shape.m * shape.n * shape.k > cost_model::kMaxFusedGemmMultiplyAdds;
    if (shape.flops() >= options.large_gemm_flops || over_fused_limit) {
      std::string reason = "large GEMM (m×n×k = " + std::to_string(shape.m) + "×" +
                           std::to_string(shape.n) + "×" + std::to_string(shape.k);
      if (shape.batch != 1) reason += ", batch " + std::to_string(shape.batch);
      reason += ", " + format_gflop(shape.flops()) + " GFLOP";
      if (shape.flops() < options.large_gemm_flops) reason += ", over the fused 64×64×64";
      return {NodeRole::kPartition, FusionDecision::forbid(reason + "): cuBLAS library call")};
    }
    return {NodeRole::kBatchedGemm, FusionDecision::allow()};
  }
  if (kind == ir::OpKind::kReduction) {
    switch (ir::classify_reduction(graph, node)) {
      case ir::ReductionKind::kColumn:
        return {NodeRole::kColumnReduction, FusionDecision::allow()};
      case ir::ReductionKind::kAll:
        return {NodeRole::kScalarReduction, FusionDecision::allow()};
      case ir::ReductionKind::kRow:
      case ir::ReductionKind::kNone:
        break;
    }
  }
  return {NodeRole::kFusible, FusionDecision::allow()};
}

}  // namespace

std::string_view node_role_name(NodeRole role) {
  switch (role) {
    case NodeRole::kFusible:
      return "fusible";
    case NodeRole::kBatchedGemm:
      return "batched_gemm";
    case NodeRole::kColumnReduction:
      return "column_reduction";
    case NodeRole::kScalarReduction:
      return "scalar_reduction";
    case NodeRole::kPartition:
      return "partition";
  }
  return "unknown";
}

Partition partition_graph(const ir::Graph& graph, const PartitionOptions& options) {
  Partition partition;
  auto capacity = static_cast<size_t>(graph.node_capacity());
  partition.roles.assign(capacity, NodeRole::kPartition);
  partition.decisions.assign(capacity, FusionDecision::forbid("dead node"));
  partition.attention_cores = fused_attention_cores(graph);
  std::vector<bool> attention(capacity, false);
  for (const ir::AttentionCore& core : partition.attention_cores) {
    attention[static_cast<size_t>(core.scores_gemm)] = options.attention;
    attention[static_cast<size_t>(core.output_gemm)] = options.attention;
  }
  for (ir::NodeId id : graph.node_ids()) {
    auto [role, decision] =
        classify(graph, graph.node(id), options, attention[static_cast<size_t>(id)]);
    partition.roles[static_cast<size_t>(id)] = role;
    partition.decisions[static_cast<size_t>(id)] = std::move(decision);
  }
  return partition;
}

}  // namespace stitch::fusion
