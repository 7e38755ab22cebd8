// Partition: node roles for the multi-step substitution heuristic.
#include "fusion/partition.h"

#include <cstdio>

#include "cost_model/cost_model.h"
#include "ir/op_registry.h"

namespace stitch::fusion {
namespace {

// The shape of a MatMul/Gemm product: out[batch..., m, n] = sum_k a[..., m, k] b[..., k, n].
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 0;
  int64_t flops = -1;  // -1: shapes not static
};

GemmShape gemm_shape(const ir::Graph& graph, const ir::Node& node) {
  GemmShape shape;
  if (node.inputs.empty() || node.inputs[0] == ir::kNoId || node.outputs.empty() ||
      node.outputs[0] == ir::kNoId) {
    return shape;
  }
  const ir::TensorType& a = graph.value(node.inputs[0]).type;
  const ir::TensorType& out = graph.value(node.outputs[0]).type;
  if (!a.is_static() || !out.is_static() || a.dims.empty()) return shape;
  if (node.op_type == "Gemm") {
    if (a.dims.size() != 2) return shape;
    shape.k = node.int_attribute("transA", 0) != 0 ? a.dims[0] : a.dims[1];
  } else {
    shape.k = a.dims.back();
  }
  const std::vector<int64_t>& dims = out.dims;
  shape.n = dims.empty() ? 1 : dims.back();
  shape.m = dims.size() < 2 ? 1 : dims[dims.size() - 2];
  int64_t elements = out.num_elements();
  shape.batch = shape.m * shape.n == 0 ? 0 : elements / (shape.m * shape.n);
  shape.flops = 2 * elements * shape.k;
  return shape;
}

std::string format_gflop(int64_t flops) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", static_cast<double>(flops) / 1e9);
  return buffer;
}

// The first present input or output whose shape is not static, as "input \"x\" is
// f32[?,128]", or "" when every one is static.
std::string non_static_value(const ir::Graph& graph, const ir::Node& node) {
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
  return "";
}

// Role and reason of one live node.
std::pair<NodeRole, std::string> classify(const ir::Graph& graph, const ir::Node& node,
                                          const PartitionOptions& options) {
  if (!node.domain.empty()) {
    return {NodeRole::kPartition,
            "op " + node.op_type + " of domain \"" + node.domain + "\": runs as its own kernel"};
  }
  if (node.op_type == "Constant") return {NodeRole::kFusible, ""};
  if (node.op_type == "Shape" || node.op_type == "Size") {
    return {NodeRole::kPartition,
            "metadata op " + node.op_type + ": reads no tensor data, runs on the host"};
  }
  ir::OpKind kind = ir::op_kind(node);
  if (kind == ir::OpKind::kOpaque) {
    return {NodeRole::kPartition, "Opaque op " + node.op_type + ": runs as its own kernel"};
  }
  std::string unknown = non_static_value(graph, node);
  if (!unknown.empty()) {
    return {NodeRole::kPartition,
            "unknown shape (" + unknown + "): give static shapes with --input-shape"};
  }
  if (kind == ir::OpKind::kConv) {
    return {NodeRole::kPartition, "Conv: cuDNN library call"};
  }
  if (kind == ir::OpKind::kGemm) {
    GemmShape shape = gemm_shape(graph, node);
    if (shape.flops < 0) {
      return {NodeRole::kPartition, "GEMM with unknown shape: cuBLAS library call"};
    }
    // A GEMM the cost model would refuse to fuse is a library call here too, so the
    // candidates never grow around it and the report names it as one.
    bool over_fused_limit =
        shape.m * shape.n * shape.k > cost_model::kMaxFusedGemmMultiplyAdds;
    if (shape.flops >= options.large_gemm_flops || over_fused_limit) {
      std::string reason = "large GEMM (m×n×k = " + std::to_string(shape.m) + "×" +
                           std::to_string(shape.n) + "×" + std::to_string(shape.k);
      if (shape.batch != 1) reason += ", batch " + std::to_string(shape.batch);
      reason += ", " + format_gflop(shape.flops) + " GFLOP";
      if (shape.flops < options.large_gemm_flops) reason += ", over the fused 64×64×64";
      return {NodeRole::kPartition, reason + "): cuBLAS library call"};
    }
    return {NodeRole::kBatchedGemm, ""};
  }
  if (kind == ir::OpKind::kReduction) {
    switch (ir::classify_reduction(graph, node)) {
      case ir::ReductionKind::kColumn:
        return {NodeRole::kColumnReduction, ""};
      case ir::ReductionKind::kAll:
        return {NodeRole::kScalarReduction, ""};
      case ir::ReductionKind::kRow:
      case ir::ReductionKind::kNone:
        break;
    }
  }
  return {NodeRole::kFusible, ""};
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

int64_t gemm_flops(const ir::Graph& graph, const ir::Node& node) {
  return gemm_shape(graph, node).flops;
}

Partition partition_graph(const ir::Graph& graph, const PartitionOptions& options) {
  Partition partition;
  auto capacity = static_cast<size_t>(graph.node_capacity());
  partition.roles.assign(capacity, NodeRole::kPartition);
  partition.reasons.assign(capacity, "dead node");
  for (ir::NodeId id : graph.node_ids()) {
    auto [role, reason] = classify(graph, graph.node(id), options);
    partition.roles[static_cast<size_t>(id)] = role;
    partition.reasons[static_cast<size_t>(id)] = std::move(reason);
  }
  return partition;
}

}  // namespace stitch::fusion
