// emit::kernel_shape: what the analytic estimate charges for a group's composition
// (docs/cost-model.md, "Composition charges"), read from the schedule the code
// generator builds for the group.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cost_model/device_profile.h"
#include "emit/group_boundary.h"
#include "emit/schedule.h"
#include "ir/text/text.h"
#include "tests/mini_attention_ir.h"

namespace stitch::emit {
namespace {

ir::Model parse(const std::string& text) {
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

cost_model::DeviceProfile h100() {
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  return std::move(profile).value();
}

// Attention in miniature: QK^T, a softmax over its rows, PV.
constexpr const char* kAttention = test_samples::kMiniAttention;

std::vector<ir::NodeId> named(const ir::Graph& graph, const std::vector<std::string>& names) {
  std::vector<ir::NodeId> ids;
  for (const std::string& name : names) {
    for (ir::NodeId id : graph.node_ids()) {
      if (graph.node(id).name == name) ids.push_back(id);
    }
  }
  EXPECT_EQ(ids.size(), names.size());
  return ids;
}

// The whole attention is the attention composition: one launch, both GEMMs from
// shared tiles, no barrier, no workspace.
TEST(KernelShapeTest, AttentionCoreIsOneLaunchWithTiledGemms) {
  ir::Model model = parse(kAttention);
  const ir::Graph& graph = model.graph;
  std::vector<ir::NodeId> all = named(graph, {"qk", "max", "sub", "exp", "sum", "div", "pv"});
  std::optional<cost_model::KernelShape> shape = kernel_shape_oracle(h100())(graph, all);
  ASSERT_TRUE(shape.has_value());
  EXPECT_FALSE(shape->global);
  EXPECT_EQ(shape->grid_barriers, 0);
  EXPECT_EQ(shape->workspace_bytes, 0);
  // Both GEMMs in the attention kernel's loops: 4 x 16 x 16 x 8 multiply-adds each.
  EXPECT_DOUBLE_EQ(shape->attention_macs, 2.0 * 4 * 16 * 16 * 8);
  EXPECT_DOUBLE_EQ(shape->thread_gemm_macs + shape->tiled_gemm_macs, 0.0);
}

// Without the second GEMM there is no attention core: QK^T read by the row max is
// not at its own index, so the group is global, with stages, a workspace and the GEMM
// one output per thread. Its stages after the first need at most a few rounds of one
// block's threads (4 x 16 rows), so the last block to finish stage 0 runs them all
// (4c.): no grid barrier is charged, though the launch stays cooperative.
TEST(KernelShapeTest, ScoresAndSoftmaxWithoutPvAreGlobal) {
  ir::Model model = parse(kAttention);
  const ir::Graph& graph = model.graph;
  std::vector<ir::NodeId> nodes = named(graph, {"qk", "max", "sub", "exp", "sum", "div"});
  std::optional<cost_model::KernelShape> shape = kernel_shape_oracle(h100())(graph, nodes);
  ASSERT_TRUE(shape.has_value());
  EXPECT_TRUE(shape->global);
  EXPECT_EQ(shape->grid_barriers, 0);
  EXPECT_GT(shape->grid_blocks, 0);  // the schedule's grid, cooperative
  EXPECT_GT(shape->workspace_bytes, 0);
  EXPECT_DOUBLE_EQ(shape->thread_gemm_macs, 4.0 * 16 * 16 * 8);
  EXPECT_DOUBLE_EQ(shape->tiled_gemm_macs, 0.0);
}

// The global composition's loops: each lane walks its share of a stage's dot products
// and reductions, a read of every operand per term. QK^T (k = 8, a thread per output:
// 8 x 2 reads), then in the next stage the row max over 16 scores (a thread per row,
// the scores in memory: 16 reads); each stage at least one item's worth. The attention
// kernel's core GEMMs (from shared tiles) have no such chain.
TEST(KernelShapeTest, GlobalLoopsGiveTheLoadChain) {
  ir::Model model = parse(kAttention);
  const ir::Graph& graph = model.graph;
  std::vector<ir::NodeId> nodes = named(graph, {"qk", "max"});
  Result<GroupSchedule> schedule = build_schedule(graph, group_boundary(graph, nodes), h100());
  ASSERT_TRUE(schedule.is_ok()) << schedule.status().message();
  ASSERT_NE(schedule->as<GlobalPlan>(), nullptr);
  ASSERT_EQ(schedule->levels, 2);
  const cost_model::KernelShape shape = kernel_shape(graph, *schedule);
  const double lanes = static_cast<double>(schedule->grid) * schedule->block;
  const double scores = 4.0 * 16 * 16, rows = 4.0 * 16;
  EXPECT_DOUBLE_EQ(shape.gemm_load_chain,
                   std::max(16.0, scores * 16 / lanes) + std::max(16.0, rows * 16 / lanes));
  EXPECT_DOUBLE_EQ(shape.load_chain, 0.0);
  std::optional<cost_model::KernelShape> core = kernel_shape_oracle(h100())(
      graph, named(graph, {"qk", "max", "sub", "exp", "sum", "div", "pv"}));
  ASSERT_TRUE(core.has_value());
  EXPECT_DOUBLE_EQ(core->gemm_load_chain, 0.0);
  // A row-local softmax walks its rows by warps: not charged here.
  std::optional<cost_model::KernelShape> rows_only =
      kernel_shape_oracle(h100())(graph, named(graph, {"max", "sub", "exp", "sum", "div"}));
  ASSERT_TRUE(rows_only.has_value());
  EXPECT_DOUBLE_EQ(rows_only->gemm_load_chain, 0.0);
}

TEST(KernelShapeTest, RowWiseSoftmaxIsNotCharged) {
  ir::Model model = parse(kAttention);
  const ir::Graph& graph = model.graph;
  std::optional<cost_model::KernelShape> shape =
      kernel_shape_oracle(h100())(graph, named(graph, {"max", "sub", "exp", "sum", "div"}));
  ASSERT_TRUE(shape.has_value());
  EXPECT_FALSE(shape->global);
  EXPECT_EQ(shape->grid_barriers, 0);
  EXPECT_EQ(shape->workspace_bytes, 0);
  EXPECT_DOUBLE_EQ(shape->thread_gemm_macs + shape->tiled_gemm_macs, 0.0);
}

// A projection inlined into the attention kernel's tile loads is recomputed by every
// query tile's block; each lane walks its share of those dot products one load after
// another (two per multiply-add): the load chain the latency charge reads.
TEST(KernelShapeTest, InlinedProjectionGivesTheLoadChain) {
  // The miniature's V computed in the group: MatMul(x, w).
  std::string text = kAttention;
  const std::string inputs = "%v: f32[4,16,8])";
  text.replace(text.find(inputs), inputs.size(), "%x: f32[4,16,32], %w: f32[32,8])");
  const std::string axes = "  %axes:";
  text.insert(text.find(axes), "  %v: f32[4,16,8] = MatMul(%x, %w) {name=\"proj\"}\n");
  ir::Model model = parse(text);
  const ir::Graph& graph = model.graph;
  const std::vector<ir::NodeId> nodes =
      named(graph, {"proj", "qk", "max", "sub", "exp", "sum", "div", "pv"});
  Result<GroupSchedule> schedule = build_schedule(graph, group_boundary(graph, nodes), h100());
  ASSERT_TRUE(schedule.is_ok()) << schedule.status().message();
  ASSERT_NE(schedule->as<AttentionPlan>(), nullptr);
  const cost_model::KernelShape shape = kernel_shape(graph, *schedule);
  const double macs = 4.0 * 16 * 8 * 32;
  const double recompute = static_cast<double>(schedule->as<AttentionPlan>()->recompute);
  EXPECT_DOUBLE_EQ(shape.thread_gemm_macs, macs * recompute);
  EXPECT_GT(shape.load_chain, 0.0);
  EXPECT_DOUBLE_EQ(shape.load_chain,
                   2 * macs * recompute / (static_cast<double>(schedule->grid) * schedule->block));
  // The attention core alone recomputes nothing.
  std::optional<cost_model::KernelShape> core = kernel_shape_oracle(h100())(
      graph, named(graph, {"qk", "max", "sub", "exp", "sum", "div", "pv"}));
  ASSERT_TRUE(core.has_value());
  EXPECT_DOUBLE_EQ(core->load_chain, 0.0);
}

TEST(KernelShapeTest, GemmWithSameIndexEpilogueIsTiled) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "gemm" (%a: f32[4,32,16], %b: f32[4,16,32]) {
  %c: f32[4,32,32] = MatMul(%a, %b) {name="mm"}
  %y: f32[4,32,32] = Relu(%c) {name="relu"}
  return %y
}
)");
  const ir::Graph& graph = model.graph;
  std::optional<cost_model::KernelShape> shape =
      kernel_shape_oracle(h100())(graph, named(graph, {"mm", "relu"}));
  ASSERT_TRUE(shape.has_value());
  EXPECT_FALSE(shape->global);
  EXPECT_EQ(shape->grid_barriers, 0);
  EXPECT_DOUBLE_EQ(shape->tiled_gemm_macs, 4.0 * 32 * 32 * 16);
  EXPECT_DOUBLE_EQ(shape->thread_gemm_macs, 0.0);
}

// A staged stencil (schedule.h 3c.) is charged per tile: a lane loads its share of the
// input tile, each element one read of x (ReLU6 inline), and its share of the tile's
// staged filters (9 weights over 256 lanes: one); read from global memory, each tap is
// a read of x and of the weight.
TEST(KernelShapeTest, StagedStencilIsChargedPerTile) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "dw" (%x: f32[1,8,64,64], %w: f32[8,1,3,3]) {
  %zero: f32[] = dense<f32[]>[0]
  %six: f32[] = dense<f32[]>[6]
  %a: f32[1,8,64,64] = Clip(%x, %zero, %six) {name="relu6"}
  %y: f32[1,8,64,64] = Conv(%a, %w) {name="dw", group=8, kernel_shape=[3,3], pads=[1,1,1,1]}
  return %y
}
)");
  const ir::Graph& graph = model.graph;
  const std::vector<ir::NodeId> nodes = named(graph, {"relu6", "dw"});
  Result<GroupSchedule> staged = build_schedule(graph, group_boundary(graph, nodes), h100());
  ASSERT_TRUE(staged.is_ok()) << staged.status().message();
  ASSERT_NE(staged->as<StencilPlan>(), nullptr);
  const StencilTile& tile = staged->as<StencilPlan>()->tile;
  // Tiles of [1, 8, 32] outputs over 64 x 64 planes: 16 per plane, 128 in all, each
  // staging [1, 10, 34] elements over 256 threads (2 loads a lane) and the plane's filter.
  EXPECT_EQ(tile.tile_h, 8);
  EXPECT_EQ(tile.tile_w, 32);
  EXPECT_EQ(tile.tiles, 128);
  EXPECT_EQ(tile.filter_row, 9);
  EXPECT_GE(tile.filter_offset, 10 * 34 * 4);
  const double tiles = std::ceil(128.0 / static_cast<double>(staged->grid));
  EXPECT_DOUBLE_EQ(kernel_shape(graph, *staged).stencil_load_chain, tiles * (2 * 1 + 1));

  ScheduleOptions options;
  options.stencil_tiles = false;
  Result<GroupSchedule> plain =
      build_schedule(graph, group_boundary(graph, nodes), h100(), options);
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  ASSERT_NE(plain->as<ThreadPlan>(), nullptr);
  const double lanes = static_cast<double>(plain->grid) * plain->block;
  EXPECT_DOUBLE_EQ(kernel_shape(graph, *plain).stencil_load_chain,
                   std::max(1.0, std::ceil(8 * 64 * 64 / lanes)) * 9 * (1 + 1));
}

}  // namespace
}  // namespace stitch::emit
