// cost_model/library_tiling.h: a library call's geometry from its node, the tiles it
// runs as, and the estimate they give (docs/perf-model.md, "Library calls"). Expected
// numbers by hand from the test profile: 80 SMs, fp32 10 TFLOP/s at 60%, 130 ns loads.
#include "cost_model/library_tiling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cost_model/perf_model.h"
#include "ir/text/text.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {
using test_util::parse;
using test_util::test_profile;

void expect_gemm(const std::optional<LibraryGemm>& gemm, int64_t groups, int64_t m, int64_t n,
                 int64_t k) {
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->groups, groups);
  EXPECT_EQ(gemm->m, m);
  EXPECT_EQ(gemm->n, n);
  EXPECT_EQ(gemm->k, k);
}

TEST(LibraryGemm, EveryLibraryOpAsGroupsOfGemms) {
  ir::Model model = parse(
      "  %b: f32[4,64,16] = MatMul(%a, %w) {name=\"mm\"}\n"
      "  %c: f32[1,64,8,8] = Conv(%x, %cw) {name=\"dense\", group=1, pads=[1,1,1,1]}\n"
      "  %g: f32[1,32,8,8] = Conv(%x, %gw) {name=\"grouped\", group=2, pads=[1,1,1,1]}\n"
      "  %d: f32[1,32,8,8] = Conv(%x, %dw) {name=\"depthwise\", group=32, pads=[1,1,1,1]}\n"
      "  %p: f32[1,32,4,4] = MaxPool(%x) {name=\"pool\", kernel_shape=[2, 2], strides=[2, 2]}\n"
      "  return %b, %c, %g, %d, %p\n",
      "%a: f32[4,64,32], %w: f32[4,32,16], %x: f32[1,32,8,8], %cw: f32[64,32,3,3], "
      "%gw: f32[32,16,3,3], %dw: f32[32,1,3,3]");
  const ir::Graph& graph = model.graph;
  expect_gemm(library_gemm(graph, graph.node(0)), 4, 64, 16, 32);
  expect_gemm(library_gemm(graph, graph.node(1)), 1, 64, 64, 32 * 9);  // implicit GEMM
  expect_gemm(library_gemm(graph, graph.node(2)), 2, 64, 16, 16 * 9);  // per group
  expect_gemm(library_gemm(graph, graph.node(3)), 32, 64, 1, 9);       // a plane per group
  expect_gemm(library_gemm(graph, graph.node(4)), 32, 16, 1, 4);       // a pool's window
  expect_gemm(library_gemm(graph), 4, 64, 16, 32);                     // the first one
}

TEST(LibraryGemm, TheLibraryNodeOfAStepBodyWithItsEpilogue) {
  ir::Model model = parse(
      "  %t: f32[1,8] = Relu(%a) {name=\"before\"}\n"
      "  %b: f32[1,4] = MatMul(%t, %w) {name=\"mm\"}\n"
      "  %z: f32[1,4] = Relu(%b) {name=\"epilogue\"}\n"
      "  return %z\n",
      "%a: f32[1,8], %w: f32[8,4]");
  expect_gemm(library_gemm(model.graph), 1, 1, 4, 8);
  ir::Model none = parse("  %z: f32[1,8] = Relu(%a) {name=\"r\"}\n  return %z\n", "%a: f32[1,8]");
  EXPECT_FALSE(library_gemm(none.graph).has_value());
}

// An empty tensor has no geometry (the call is left to its bytes), and a zero
// geometry given directly still tiles as one CTA, never a division by zero.
TEST(LibraryGemm, EmptyTensorsHaveNoGeometry) {
  ir::Model model = parse(
      "  %b: f32[0,16] = MatMul(%a, %w) {name=\"mm\"}\n"
      "  %c: f32[1,0,8,8] = Conv(%x, %cw) {name=\"conv\", group=1, pads=[1,1,1,1]}\n"
      "  return %b, %c\n",
      "%a: f32[0,32], %w: f32[32,16], %x: f32[1,4,8,8], %cw: f32[0,4,3,3]");
  EXPECT_FALSE(library_gemm(model.graph, model.graph.node(0)).has_value());
  EXPECT_FALSE(library_gemm(model.graph, model.graph.node(1)).has_value());
  const LibraryTiling t = library_tiling({0, 0, 0, 0}, false, test_profile());
  EXPECT_EQ(t.ctas, 1);  // a 1x1 tile; k = 1 is too short to split
  EXPECT_EQ(t.splits, 1);
  EXPECT_EQ(t.waves, 1);
}

// A GEMM large enough for the largest tile fills every SM many times over: its compute
// is its FLOPs at the library's rate but for the last wave's quantization.
TEST(LibraryTiling, LargeGemmTakesTheLargestTile) {
  const DeviceProfile profile = test_profile();
  const LibraryTiling t = library_tiling({1, 4096, 4096, 4096}, false, profile);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.splits, 1);
  EXPECT_EQ(t.ctas, 1024);
  EXPECT_EQ(t.waves, 13);  // 1024 / 80 = 12.8
  EXPECT_EQ(t.sms, 80);
  EXPECT_DOUBLE_EQ(t.cta_flops, 2.0 * 128 * 128 * 4096);
  EXPECT_DOUBLE_EQ(t.load_rounds, 1 + 512 / 2.0);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const KernelEstimate tiled =
      estimate_library_call(flops, 0, false, LibraryGemm{1, 4096, 4096, 4096}, profile);
  const KernelEstimate flat = estimate_library_call(flops, 0, false, std::nullopt, profile);
  EXPECT_NEAR(tiled.compute_us / flat.compute_us, 13.0 * 80 / 1024, 1e-12);
  EXPECT_EQ(tiled.bound, Bound::kLibrary);
}

// A 1x1 conv at 7x7 with 1280 filters over 320 channels: 49 rows fill at most a
// 64-row tile, and only 32x32 tiles give each of the 80 SMs one.
TEST(LibraryTiling, SmallGemmShrinksItsTileToFillTheSms) {
  const DeviceProfile profile = test_profile();
  const LibraryTiling t = library_tiling({1, 49, 1280, 320}, false, profile);
  EXPECT_EQ(t.tile_m, 32);
  EXPECT_EQ(t.tile_n, 32);
  EXPECT_EQ(t.ctas, 2 * 40);
  EXPECT_EQ(t.splits, 1);
  EXPECT_EQ(t.waves, 1);
  const double rate_per_sm = 0.6 * 10e12 / 80;
  const KernelEstimate e = estimate_library_call(2.0 * 49 * 1280 * 320, 0, false,
                                                 LibraryGemm{1, 49, 1280, 320}, profile);
  EXPECT_DOUBLE_EQ(e.compute_us, 2.0 * 32 * 32 * 320 / rate_per_sm * 1e6);
  EXPECT_EQ(e.sms_used, 80);
  // A 64-row GEMM of 8 columns takes the smallest tile, 16 x 8, and still fills 4 SMs
  // of 80 (k = 64 is too short to split).
  const KernelEstimate narrow =
      estimate_library_call(2.0 * 64 * 8 * 64, 0, false, LibraryGemm{1, 64, 8, 64}, profile);
  EXPECT_EQ(narrow.sms_used, 4);
  EXPECT_DOUBLE_EQ(narrow.compute_us, 2.0 * 16 * 8 * 64 / rate_per_sm * 1e6);
}

// A GEMV (m = 1) has too few tiles for the SMs even at the smallest: it splits k, and
// each CTA's k loop waits out a load every 2 steps of 8.
TEST(LibraryTiling, GemvSplitsKAndIsLatencyBound) {
  const DeviceProfile profile = test_profile();
  const LibraryTiling t = library_tiling({1, 1, 256, 4096}, false, profile);
  EXPECT_EQ(t.tile_m, 1);
  EXPECT_EQ(t.tile_n, 16);
  EXPECT_EQ(t.splits, 5);  // 80 SMs / 16 tiles
  EXPECT_EQ(t.k_per_cta, 820);
  EXPECT_EQ(t.ctas, 80);
  EXPECT_DOUBLE_EQ(t.load_rounds, 1 + 103 / 2.0);
  const KernelEstimate e =
      estimate_library_call(2.0 * 256 * 4096, 0, false, LibraryGemm{1, 1, 256, 4096}, profile);
  EXPECT_DOUBLE_EQ(e.latency_us, (1 + 103 / 2.0) * 0.130);
  EXPECT_DOUBLE_EQ(e.total_us, e.launch_us + std::max({e.dram_us, e.compute_us, e.latency_us}));
  EXPECT_GT(e.latency_us, e.compute_us);
  // Split-k never leaves a CTA fewer than 64 of k: 16 tiles over k = 128 split in 2.
  EXPECT_EQ(library_tiling({1, 1, 256, 128}, false, profile).splits, 2);
  EXPECT_EQ(library_tiling({1, 1, 256, 100}, false, profile).splits, 1);
}

// On tensor cores (float16, or TF32) a step covers 32 of k and 4 are in flight.
TEST(LibraryTiling, TensorCoresStepFurtherWithDeeperPipelines) {
  const DeviceProfile profile = test_profile();
  const LibraryTiling t = library_tiling({1, 4096, 4096, 4096}, true, profile);
  EXPECT_EQ(t.tile_k, 32);
  EXPECT_EQ(t.stages, 4);
  EXPECT_DOUBLE_EQ(t.load_rounds, 1 + 128 / 4.0);
}

// Grouped convs: every group's tiles are CTAs of the one call.
TEST(LibraryTiling, GroupsAreTilesOfOneCall) {
  const DeviceProfile profile = test_profile();
  const LibraryTiling t = library_tiling({32, 16, 16, 144}, false, profile);
  EXPECT_EQ(t.tile_m, 16);
  EXPECT_EQ(t.tile_n, 16);
  EXPECT_EQ(t.splits, 2);  // 80 / 32, and 144 / 64
  EXPECT_EQ(t.k_per_cta, 72);
  EXPECT_EQ(t.ctas, 64);
  EXPECT_DOUBLE_EQ(t.load_rounds, 1 + 9 / 2.0);
}

}  // namespace
}  // namespace stitch::cost_model
