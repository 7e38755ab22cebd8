// Tests for fusion/partition: node roles and the reasons for partition ops.
#include "fusion/partition.h"

#include <gtest/gtest.h>

#include <string>

#include "cost_model/cost_model.h"
#include "fusion/epilogue.h"
#include "ir/core/gemm_shape.h"
#include "tests/fusion/fusion_test_util.h"

namespace stitch::fusion {
namespace {

using test_util::node_named;

ir::Model parse(const std::string& text) { return test_util::parse_ir(text); }

// One node of every role, plus partition ops of every reason.
constexpr const char* kMixed = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17, "com.example":1}
graph "mixed" (%big_a: f32[1024,1024], %big_b: f32[1024,1024], %small_a: f32[64,64],
               %batch_a: f32[8,64,64], %image: f32[1,3,8,8], %weights: f32[4,3,3,3],
               %dynamic: f32[?,4], %mid_a: f32[128,64]) {
  %axes0: i64[1] = dense<i64[1]>[0]
  %axes1: i64[1] = dense<i64[1]>[1]
  %axes01: i64[2] = dense<i64[2]>[0, 1]
  %large: f32[1024,1024] = MatMul(%big_a, %big_b) {name="large"}
  %medium: f32[64,64] = Gemm(%small_a, %small_a) {name="medium_t", transA=1}
  %small: f32[64,64] = MatMul(%small_a, %small_a) {name="small"}
  %mid: f32[128,64] = MatMul(%mid_a, %small_a) {name="mid"}
  %batched: f32[8,64,64] = MatMul(%batch_a, %batch_a) {name="batched"}
  %conv: f32[1,4,6,6] = Conv(%image, %weights) {name="conv"}
  %pool: f32[1,4,3,3] = MaxPool(%conv) {name="pool", kernel_shape=[2,2], strides=[2,2]}
  %column: f32[1024] = ReduceSum(%large, %axes0) {name="column", keepdims=0}
  %row: f32[1024] = ReduceSum(%large, %axes1) {name="row", keepdims=0}
  %scalar: f32[] = ReduceSum(%large, %axes01) {name="scalar", keepdims=0}
  %relu: f32[64,64] = Relu(%small) {name="relu"}
  %shape: i64[1] = Constant() {name="constant", value=dense<i64[1]>[4096]}
  %view: f32[4096] = Reshape(%relu, %shape) {name="view"}
  %meta: i64[2] = Shape(%small) {name="meta"}
  %custom: f32[64,64] = MyOp(%relu) {name="custom", domain="com.example"}
  %dyn: f32[?,4] = Relu(%dynamic) {name="dyn"}
  return %column, %row, %scalar, %view, %pool, %batched, %meta, %custom, %dyn, %medium, %mid
}
)";

TEST(PartitionTest, RolesOfEveryKind) {
  ir::Model model = parse(kMixed);
  const ir::Graph& graph = model.graph;
  Partition partition = partition_graph(graph, PartitionOptions{});
  auto role = [&](const char* name) { return partition.role(node_named(graph, name)); };
  auto reason = [&](const char* name) {
    return partition.decision(node_named(graph, name)).reason();
  };
  auto can_fuse = [&](const char* name) {
    return partition.decision(node_named(graph, name)).can_fuse();
  };
  EXPECT_EQ(role("large"), NodeRole::kPartition);
  // 2 * 1024^3 = 2^31 flops: exactly the default threshold.
  EXPECT_EQ(reason("large"),
            "large GEMM (m×n×k = 1024×1024×1024, 2.15 GFLOP): cuBLAS library call");
  EXPECT_EQ(role("medium_t"), NodeRole::kBatchedGemm);
  EXPECT_TRUE(can_fuse("medium_t"));
  EXPECT_EQ(ir::gemm_shape(graph, graph.node(node_named(graph, "medium_t")))->flops(),
            2 * 64 * 64 * 64);
  EXPECT_EQ(role("small"), NodeRole::kBatchedGemm);
  // 128*64*64 multiply-adds: far below 2 GFLOP, but more than a fused kernel holds.
  EXPECT_EQ(role("mid"), NodeRole::kPartition);
  EXPECT_EQ(reason("mid"),
            "large GEMM (m×n×k = 128×64×64, 0.00 GFLOP, over the fused 64×64×64): cuBLAS "
            "library call");
  EXPECT_EQ(role("batched"), NodeRole::kBatchedGemm);
  EXPECT_EQ(role("conv"), NodeRole::kPartition);
  EXPECT_EQ(reason("conv"), "Conv: cuDNN library call");
  EXPECT_EQ(role("pool"), NodeRole::kFusible);  // a stencil
  EXPECT_EQ(role("column"), NodeRole::kColumnReduction);
  EXPECT_EQ(role("row"), NodeRole::kFusible);
  EXPECT_EQ(role("scalar"), NodeRole::kScalarReduction);
  EXPECT_EQ(role("relu"), NodeRole::kFusible);
  EXPECT_EQ(role("view"), NodeRole::kFusible);
  EXPECT_EQ(role("constant"), NodeRole::kFusible);
  EXPECT_TRUE(can_fuse("constant"));
  EXPECT_EQ(role("meta"), NodeRole::kPartition);
  EXPECT_EQ(reason("meta"), "metadata op Shape: reads no tensor data, runs on the host");
  EXPECT_EQ(role("custom"), NodeRole::kPartition);
  EXPECT_EQ(reason("custom"), "op MyOp of domain \"com.example\": runs as its own kernel");
  EXPECT_EQ(role("dyn"), NodeRole::kPartition);
  EXPECT_EQ(reason("dyn"),
            "unknown shape (input \"dynamic\" is f32[?,4]): give static shapes with "
            "--input-shape");
}

// Stencils (ir/core/window.h) fuse unless fusion::stencil_refusal says why not.
TEST(PartitionTest, StencilsFuseUnlessRefused) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "stencils" (%x: f32[1,32,8,8], %dw: f32[32,1,3,3], %gw: f32[32,16,3,3],
                  %y: f32[1,64,8,8], %ww: f32[32,32,3,3], %q: i8[1,32,8,8],
                  %short: f32[8]) {
  %d: f32[1,32,8,8] = Conv(%x, %dw) {name="depthwise", group=32, pads=[1,1,1,1]}
  %g: f32[1,32,8,8] = Conv(%x, %gw) {name="grouped", group=2, pads=[1,1,1,1]}
  %w: f32[1,32,8,8] = Conv(%y, %ww) {name="wide", group=2, pads=[1,1,1,1]}
  %s: f32[1,32,8,8] = Conv(%x, %dw, %short) {name="short_bias", group=32, pads=[1,1,1,1]}
  %a: f32[1,32,4,4] = AveragePool(%x) {name="average", kernel_shape=[2,2], strides=[2,2]}
  %m: f32[1,32,4,4], %i: i64[1,32,4,4] = MaxPool(%x) {name="indexed", kernel_shape=[2,2], strides=[2,2]}
  %p: i8[1,32,4,4] = MaxPool(%q) {name="quantized", kernel_shape=[2,2], strides=[2,2]}
  return %d, %g, %w, %s, %a, %m, %i, %p
}
)");
  const ir::Graph& graph = model.graph;
  Partition partition = partition_graph(graph, PartitionOptions{});
  auto role = [&](const char* name) { return partition.role(node_named(graph, name)); };
  auto reason = [&](const char* name) {
    return partition.decision(node_named(graph, name)).reason();
  };
  EXPECT_EQ(role("depthwise"), NodeRole::kFusible);
  EXPECT_EQ(role("average"), NodeRole::kFusible);
  EXPECT_EQ(role("grouped"), NodeRole::kFusible);  // 16 channels per group: the limit
  EXPECT_EQ(role("wide"), NodeRole::kPartition);
  EXPECT_EQ(reason("wide"),
            "grouped Conv with 32 input channels per group (a stencil takes at most 16): cuDNN "
            "library call");
  // 8 biases for 32 filters: the generated code would read past them.
  EXPECT_EQ(role("short_bias"), NodeRole::kPartition);
  EXPECT_EQ(reason("short_bias"),
            "Conv: its window, weight or bias does not fit its input; runs as its own kernel");
  EXPECT_EQ(role("indexed"), NodeRole::kPartition);
  EXPECT_EQ(reason("indexed"), "MaxPool's Indices output is read: runs as its own kernel");
  EXPECT_EQ(role("quantized"), NodeRole::kPartition);
  EXPECT_EQ(reason("quantized"), "MaxPool of i8 elements: runs as its own kernel");
  // --no-stencils: cuDNN runs them all.
  PartitionOptions off;
  off.stencils = false;
  Partition library = partition_graph(graph, off);
  const ir::NodeId depthwise = node_named(graph, "depthwise");
  EXPECT_EQ(library.role(depthwise), NodeRole::kPartition);
  EXPECT_EQ(library.decision(depthwise).reason(),
            "Conv: stencils off (--no-stencils): cuDNN library call");
  EXPECT_TRUE(is_library_call(graph.node(depthwise), library));
}

TEST(PartitionTest, ThresholdDecidesLargeGemm) {
  ir::Model model = parse(kMixed);
  const ir::Graph& graph = model.graph;
  ir::NodeId small = node_named(graph, "small");
  ir::NodeId batched = node_named(graph, "batched");
  EXPECT_EQ(ir::gemm_shape(graph, graph.node(small))->flops(), 2 * 64 * 64 * 64);
  EXPECT_EQ(ir::gemm_shape(graph, graph.node(batched))->flops(), 8 * 2 * 64 * 64 * 64);
  PartitionOptions options;
  options.large_gemm_flops = 2 * 64 * 64 * 64 + 1;
  Partition partition = partition_graph(graph, options);
  EXPECT_EQ(partition.role(small), NodeRole::kBatchedGemm);
  EXPECT_EQ(partition.role(batched), NodeRole::kPartition);
  EXPECT_EQ(partition.decision(batched).reason(),
            "large GEMM (m×n×k = 64×64×64, batch 8, 0.00 GFLOP): cuBLAS library call");
}

TEST(PartitionTest, DeadNodesArePartitionOps) {
  ir::Model model = parse(kMixed);
  ir::Graph& graph = model.graph;
  ir::NodeId relu = node_named(graph, "dyn");
  graph.remove_node(relu);
  Partition partition = partition_graph(graph, PartitionOptions{});
  ASSERT_EQ(partition.roles.size(), static_cast<size_t>(graph.node_capacity()));
  EXPECT_EQ(partition.role(relu), NodeRole::kPartition);
  EXPECT_EQ(partition.decision(relu).reason(), "dead node");
}

TEST(PartitionTest, RoleNames) {
  EXPECT_EQ(node_role_name(NodeRole::kFusible), "fusible");
  EXPECT_EQ(node_role_name(NodeRole::kBatchedGemm), "batched_gemm");
  EXPECT_EQ(node_role_name(NodeRole::kColumnReduction), "column_reduction");
  EXPECT_EQ(node_role_name(NodeRole::kScalarReduction), "scalar_reduction");
  EXPECT_EQ(node_role_name(NodeRole::kPartition), "partition");
}

}  // namespace
}  // namespace stitch::fusion
