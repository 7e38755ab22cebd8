// Tests of fusion/fusion_policy.h: the stencil and attention limits live there alone.
// Each case builds its graph from the header's constant, so a change of the policy
// moves the cases with it: at the limit the node fuses, one past it it does not, in
// the partition and in the pattern scorer alike.
#include "fusion/fusion_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "cost_model/cost_model.h"
#include "fusion/partition.h"
#include "ir/core/window.h"
#include "tests/fusion/fusion_test_util.h"

namespace stitch::fusion {
namespace {

using test_util::node_named;

// Softmax(Q K) V with 64 queries and 64 keys of head dim `d` (d and dv alike). Each
// GEMM has 64 x 64 x d multiply-adds, over the fused 64x64x64 once d > 64: only an
// attention core exempts them.
ir::Model attention_of_head_dim(int64_t d) {
  const std::string h = std::to_string(d);
  return test_util::parse_ir(
      "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\n"
      "graph \"attention\" (%q: f32[1,64," +
      h + "], %k: f32[1," + h + ",64], %v: f32[1,64," + h +
      "]) {\n"
      "  %axes: i64[1] = dense<i64[1]>[2]\n"
      "  %x: f32[1,64,64] = MatMul(%q, %k) {name=\"qk\"}\n"
      "  %m: f32[1,64,1] = ReduceMax(%x) {name=\"max\", axes=[2], keepdims=1}\n"
      "  %s: f32[1,64,64] = Sub(%x, %m) {name=\"sub\"}\n"
      "  %e: f32[1,64,64] = Exp(%s) {name=\"exp\"}\n"
      "  %z: f32[1,64,1] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n"
      "  %p: f32[1,64,64] = Div(%e, %z) {name=\"div\"}\n"
      "  %o: f32[1,64," +
      h +
      "] = MatMul(%p, %v) {name=\"pv\"}\n"
      "  return %o\n}\n");
}

TEST(FusionPolicyTest, AttentionAtTheHeadDimLimitFusesWhole) {
  ir::Model model = attention_of_head_dim(kMaxAttentionHeadDim);
  const ir::Graph& graph = model.graph;
  std::string why;
  ASSERT_TRUE(match_fused_attention(graph, node_named(graph, "pv"), &why).has_value()) << why;
  Partition partition = partition_graph(graph, PartitionOptions{});
  ASSERT_EQ(partition.attention_cores.size(), 1u);
  EXPECT_EQ(partition.role(node_named(graph, "qk")), NodeRole::kBatchedGemm);
  EXPECT_EQ(partition.role(node_named(graph, "pv")), NodeRole::kBatchedGemm);
  const cost_model::PatternScore whole =
      cost_model::score_pattern(graph, partition.attention_cores[0].nodes(), test_util::h100(),
                                with_fusion_policy(cost_model::ScoreOptions{}));
  EXPECT_TRUE(whole.feasible) << whole.reason;
}

TEST(FusionPolicyTest, AttentionPastTheHeadDimLimitIsNotFused) {
  ir::Model model = attention_of_head_dim(kMaxAttentionHeadDim + 1);
  const ir::Graph& graph = model.graph;
  const ir::NodeId pv = node_named(graph, "pv");
  // The graph holds the core (ir/ reports it); the policy refuses it.
  std::optional<ir::AttentionCore> core = ir::match_attention_core(graph, pv);
  ASSERT_TRUE(core.has_value());
  std::string why;
  EXPECT_FALSE(match_fused_attention(graph, pv, &why).has_value());
  EXPECT_EQ(why, "a head dim over " + std::to_string(kMaxAttentionHeadDim));
  EXPECT_TRUE(fused_attention_cores(graph).empty());
  Partition partition = partition_graph(graph, PartitionOptions{});
  EXPECT_TRUE(partition.attention_cores.empty());
  EXPECT_EQ(partition.role(node_named(graph, "qk")), NodeRole::kPartition);
  EXPECT_EQ(partition.role(pv), NodeRole::kPartition);
  // The scorer refuses the GEMMs under the policy's limit and takes them without one:
  // the limit it applies is the one it is handed.
  const cost_model::PatternScore limited = cost_model::score_pattern(
      graph, core->nodes(), test_util::h100(), with_fusion_policy(cost_model::ScoreOptions{}));
  EXPECT_FALSE(limited.feasible);
  EXPECT_NE(limited.reason.find("GEMM m*n*k"), std::string::npos) << limited.reason;
  const cost_model::PatternScore unlimited = cost_model::score_pattern(
      graph, core->nodes(), test_util::h100(), cost_model::ScoreOptions{});
  EXPECT_TRUE(unlimited.feasible) << unlimited.reason;
}

// A grouped Conv over f32[1, 2 c, 8, 8] with two groups of `c` input channels each.
ir::Model grouped_conv(int64_t c) {
  const std::string in = std::to_string(2 * c), per_group = std::to_string(c);
  return test_util::parse_ir(
      "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\n"
      "graph \"grouped\" (%x: f32[1," +
      in + ",8,8], %w: f32[" + in + "," + per_group +
      ",3,3]) {\n"
      "  %y: f32[1," +
      in +
      ",8,8] = Conv(%x, %w) {name=\"conv\", group=2, pads=[1,1,1,1]}\n"
      "  %r: f32[1," +
      in +
      ",8,8] = Relu(%y) {name=\"relu\"}\n"
      "  return %r\n}\n");
}

TEST(FusionPolicyTest, GroupedConvAtTheChannelLimitIsAStencil) {
  ir::Model model = grouped_conv(kStencilMaxChannelsPerGroup);
  const ir::Graph& graph = model.graph;
  const ir::NodeId conv = node_named(graph, "conv");
  EXPECT_EQ(fusion::stencil_refusal(graph, graph.node(conv)), std::nullopt);
  EXPECT_EQ(partition_graph(graph, PartitionOptions{}).role(conv), NodeRole::kFusible);
  const cost_model::PatternScore score =
      cost_model::score_pattern(graph, {conv, node_named(graph, "relu")}, test_util::h100(),
                                with_fusion_policy(cost_model::ScoreOptions{}));
  EXPECT_TRUE(score.feasible) << score.reason;
}

TEST(FusionPolicyTest, GroupedConvPastTheChannelLimitIsALibraryCall) {
  const int64_t channels = kStencilMaxChannelsPerGroup + 1;
  ir::Model model = grouped_conv(channels);
  const ir::Graph& graph = model.graph;
  const ir::NodeId conv = node_named(graph, "conv");
  const std::string expected = "grouped Conv with " + std::to_string(channels) +
                               " input channels per group (a stencil takes at most " +
                               std::to_string(kStencilMaxChannelsPerGroup) +
                               "): cuDNN library call";
  EXPECT_EQ(fusion::stencil_refusal(graph, graph.node(conv)), expected);
  // ir/ applies no limit of its own: the same node is a stencil under a wider one.
  EXPECT_EQ(ir::stencil_refusal(graph, graph.node(conv), channels), std::nullopt);
  Partition partition = partition_graph(graph, PartitionOptions{});
  EXPECT_EQ(partition.role(conv), NodeRole::kPartition);
  EXPECT_EQ(partition.decision(conv).reason(), expected);
  const cost_model::PatternScore score =
      cost_model::score_pattern(graph, {conv, node_named(graph, "relu")}, test_util::h100(),
                                with_fusion_policy(cost_model::ScoreOptions{}));
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason, "node \"conv\" (Conv): " + expected);
}

}  // namespace
}  // namespace stitch::fusion
