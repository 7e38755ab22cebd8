// M(V), score_pattern and the plan estimate on a fixed test profile (no GPU, no
// shipped file): every expected number is computed by hand in the comments.
#include "cost_model/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/text/text.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {

using test_util::parse;
using test_util::test_profile;

void expect_relative(double actual, double expected) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * 1e-9) << "expected " << expected;
}

// score_pattern of `nodes` with the test profile.
PatternScore score_of(const ir::Model& model, const std::vector<ir::NodeId>& nodes,
                      const ScoreOptions& options = ScoreOptions{}) {
  return score_pattern(model.graph, nodes, test_profile(), options);
}

TEST(MemoryTimeTest, AtBetweenAndOutsideTheCurve) {
  DeviceProfile profile = test_profile();
  EXPECT_EQ(memory_time_us(profile, 0), 0.0);
  expect_relative(memory_time_us(profile, 1024), 1.024);              // 1024 B / 1e9 B/s
  expect_relative(memory_time_us(profile, 1048576), 10.48576);        // 1 MiB / 100e9
  expect_relative(memory_time_us(profile, 1073741824), 1073.741824);  // 1 GiB / 1000e9
  // 8 MiB: ln(8)/ln(1024) = 0.3 of the way: bw = 100e9 + 0.3 * 900e9 = 370e9.
  expect_relative(memory_time_us(profile, 8388608), 8388608 / 370e9 * 1e6);
  // 8 KiB: 0.3 of the way from 1 KiB to 1 MiB: bw = 1e9 + 0.3 * 99e9 = 30.7e9.
  expect_relative(memory_time_us(profile, 8192), 8192 / 30.7e9 * 1e6);
  // Clamped: below the first point the first bandwidth, above the last the last.
  expect_relative(memory_time_us(profile, 512), 0.512);
  expect_relative(memory_time_us(profile, 2147483648.0), 2147.483648);
}

const char* kChain =
    "  %t: f32[1024,1024] = Add(%x, %y) {name=\"add\"}\n"
    "  %z: f32[1024,1024] = Relu(%t) {name=\"relu\"}\n"
    "  return %z\n";
const char* kChainInputs = "%x: f32[1024,1024], %y: f32[1024,1024]";

TEST(ScorePatternTest, ElementwiseChain) {
  ir::Model model = parse(kChain, kChainInputs);
  PatternScore score = score_of(model, {0, 1});
  ASSERT_TRUE(score.feasible) << score.reason;
  // t (4 MiB) is written once and read once, both on chip now: 8388608 bytes.
  EXPECT_EQ(score.bytes_saved, 8388608);
  EXPECT_EQ(score.num_kernels_replaced, 2);
  EXPECT_EQ(score.shared_memory_bytes, 0);
  EXPECT_EQ(score.recompute_bytes, 0);
  // Alone, Add moves x, y, t (12 MiB) and Relu t, z (8 MiB); fused, x, y, z (12 MiB).
  // M(12 MiB) + M(8 MiB) - M(12 MiB) = M(8 MiB) = 8388608 / 370e9 s = 22.6719135 us;
  // + (2 - 1) * 5 us.
  expect_relative(score.score_us, 27.67191351351351);
}

TEST(ScorePatternTest, LaunchLatencyOverride) {
  ir::Model model = parse(kChain, kChainInputs);
  ScoreOptions options;
  options.launch_latency_us_override = 0;
  PatternScore score = score_of(model, {0, 1}, options);
  expect_relative(score.score_us, 22.67191351351351);
}

TEST(ScorePatternTest, ViewInsideThePatternIsTransparent) {
  ir::Model model = parse(
      "  %shape: i64[2] = dense<i64[2]>[1048576, 1]\n"
      "  %t: f32[1024,1024] = Add(%x, %y) {name=\"add\"}\n"
      "  %r: f32[1048576,1] = Reshape(%t, %shape) {name=\"reshape\"}\n"
      "  %z: f32[1048576,1] = Relu(%r) {name=\"relu\"}\n"
      "  return %z\n",
      kChainInputs);
  PatternScore score = score_of(model, {0, 1, 2});
  ASSERT_TRUE(score.feasible) << score.reason;
  // Same as the chain: the Reshape moves no data and launches nothing.
  EXPECT_EQ(score.bytes_saved, 8388608);
  EXPECT_EQ(score.num_kernels_replaced, 2);
  expect_relative(score.score_us, 27.67191351351351);
}

TEST(ScorePatternTest, IntermediateAlsoReadOutside) {
  // t is a graph output: still written once, only its read is saved.
  ir::Model model = parse(
      "  %t: f32[1024,1024] = Add(%x, %y) {name=\"add\"}\n"
      "  %z: f32[1024,1024] = Relu(%t) {name=\"relu\"}\n"
      "  return %z, %t\n",
      kChainInputs);
  PatternScore score = score_of(model, {0, 1});
  ASSERT_TRUE(score.feasible) << score.reason;
  EXPECT_EQ(score.bytes_saved, 4194304);
  // Alone: Add 12 MiB, Relu 8 MiB; fused: x, y, t, z = 16 MiB. bw(12 MiB) = 100e9 +
  // 900e9 * ln(12)/ln(1024) = 422.65e9: M = 29.7717082 us; M(8 MiB) = 22.6719135;
  // M(16 MiB) = 16777216 / 460e9 s = 36.4722087. 29.7717 + 22.6719 - 36.4722 + 5.
  expect_relative(score.score_us, 20.97141303407551);
}

TEST(ScorePatternTest, SoftmaxNeedsSharedMemoryForItsRows) {
  ir::Model model = parse(
      "  %m: f32[256,1] = ReduceMax(%x) {name=\"max\", axes=[1], keepdims=1}\n"
      "  %d: f32[256,1024] = Sub(%x, %m) {name=\"sub\"}\n"
      "  %e: f32[256,1024] = Exp(%d) {name=\"exp\"}\n"
      "  %s: f32[256,1] = ReduceSum(%e) {name=\"sum\", axes=[1], keepdims=1}\n"
      "  %y: f32[256,1024] = Div(%e, %s) {name=\"div\"}\n"
      "  return %y\n",
      "%x: f32[256,1024]");
  PatternScore score = score_of(model, {0, 1, 2, 3, 4});
  ASSERT_TRUE(score.feasible) << score.reason;
  // m, s: 1024 bytes each, written + read once: 2 * 2048.
  // d: 1 MiB, written + read by Exp: 2 * 1048576. e: written + read by ReduceSum
  // and Div: 3 * 1048576. x: read by ReduceMax and Sub, once now: 1048576.
  EXPECT_EQ(score.bytes_saved, 2048 + 2097152 + 3145728 + 2048 + 1048576);
  // Both row reductions are broadcast back over [256,1024]: each stages a row of
  // 1024 f32 in shared memory.
  EXPECT_EQ(score.shared_memory_bytes, 2 * 1024 * 4);
  EXPECT_EQ(score.recompute_bytes, 0);
  EXPECT_EQ(score.num_kernels_replaced, 5);
  // Alone: max moves x and m (1049600 bytes), sub x, m, d (2098176), exp d, e
  // (2097152), sum e, s (1049600), div e, s, y (2098176); fused: x, y (2 MiB).
  // M: 10.4827145, 11.0393488, 11.0376421, 10.4827145, 11.0393488 us, less M(2 MiB) =
  // 11.0376421, + 4 * 5 us. (M(V_saved) would credit 18.92: the floor of the curve is
  // saved once per kernel removed, not once per pattern.)
  expect_relative(score.score_us, 63.044126620299224);
}

TEST(ScorePatternTest, SharedMemoryOverTheLimitIsInfeasible) {
  // A row of 32000 f32 is 128000 bytes, over the 102400-byte opt-in limit.
  ir::Model model = parse(
      "  %m: f32[8,1] = ReduceMax(%x) {name=\"max\", axes=[1], keepdims=1}\n"
      "  %d: f32[8,32000] = Sub(%x, %m) {name=\"sub\"}\n"
      "  return %d\n",
      "%x: f32[8,32000]");
  PatternScore score = score_of(model, {0, 1});
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.score_us, -1);
  EXPECT_EQ(score.shared_memory_bytes, 128000);
  EXPECT_EQ(score.reason,
            "needs 128000 bytes of shared memory per block, over the device's 102400 (test "
            "opt-in limit)");
}

TEST(ScorePatternTest, PackedPairSharingAnInput) {
  ir::Model model = parse(
      "  %a: f32[1024,1024] = Relu(%x) {name=\"relu\"}\n"
      "  %b: f32[1024,1024] = Sigmoid(%x) {name=\"sigmoid\"}\n"
      "  return %a, %b\n",
      "%x: f32[1024,1024]");
  PatternScore score = score_of(model, {0, 1});
  ASSERT_TRUE(score.feasible) << score.reason;
  // x is read once instead of twice: 4 MiB saved. Alone each moves 8 MiB, fused
  // 12 MiB: 2 * 22.6719135 - 29.7717082 + 5 us.
  EXPECT_EQ(score.bytes_saved, 4194304);
  expect_relative(score.score_us, 20.572118810812828);
}

TEST(ScorePatternTest, SmallOpBroadcastIsRecomputed) {
  ir::Model model = parse(
      "  %e: f32[1,1024] = Exp(%b) {name=\"exp\"}\n"
      "  %z: f32[1024,1024] = Add(%x, %e) {name=\"add\"}\n"
      "  return %z\n",
      "%x: f32[1024,1024], %b: f32[1,1024]");
  PatternScore score = score_of(model, {0, 1});
  ASSERT_TRUE(score.feasible) << score.reason;
  // e (4096 bytes) written and read once: 8192 saved. Exp is recomputed for each
  // of the 1048576 - 1024 extra elements at 4 ops each: 16760832 bytes.
  EXPECT_EQ(score.bytes_saved, 8192);
  EXPECT_EQ(score.recompute_bytes, (1048576 - 1024) * 4 * 4);
  // Alone, Exp moves b, e (8192 bytes) and Add x, e, z (8 MiB + 4 KiB), as much as the
  // fused kernel (x, b, z): the memory term is M(8192) = 0.26684039 us. M(16760832) =
  // 36.44664276 us: 0.2668 + 5 - 36.4466.
  expect_relative(score.score_us, -31.179802368504127);
}

TEST(ScorePatternTest, TooManyReductions) {
  ir::Model model = parse(
      "  %m: f32[256,1] = ReduceMax(%x) {name=\"max\", axes=[1], keepdims=1}\n"
      "  %d: f32[256,1024] = Sub(%x, %m) {name=\"sub\"}\n"
      "  %s: f32[256,1] = ReduceSum(%d) {name=\"sum\", axes=[1], keepdims=1}\n"
      "  return %s\n",
      "%x: f32[256,1024]");
  ScoreOptions options;
  options.max_reductions_per_kernel = 1;
  PatternScore score = score_of(model, {0, 1, 2}, options);
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.score_us, -1);
  EXPECT_EQ(score.reason, "2 reductions in one kernel, over the limit 1");
  options.max_reductions_per_kernel = 2;
  EXPECT_TRUE(score_of(model, {0, 1, 2}, options).feasible);
}

// A chain longer than the default limit (512 nodes) is refused: its generated code
// would take nvcc minutes to compile.
TEST(ScorePatternTest, TooManyNodesForOneKernel) {
  std::string body;
  std::string previous = "x";
  for (int i = 0; i < 513; ++i) {
    const std::string name = "t" + std::to_string(i);
    body += "  %" + name + ": f32[64] = Relu(%" + previous + ") {name=\"relu_" + std::to_string(i) +
            "\"}\n";
    previous = name;
  }
  ir::Model model = parse(body + "  return %" + previous + "\n", "%x: f32[64]");
  std::vector<ir::NodeId> nodes = model.graph.node_ids();
  PatternScore score = score_of(model, nodes);
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason,
            "513 nodes in one kernel, over the limit 512 (nvcc's time grows faster than linearly "
            "with the inlined ops)");
  nodes.pop_back();
  EXPECT_TRUE(score_of(model, nodes).feasible);
}

TEST(ScorePatternTest, ColumnAndRowReductionsOverDifferentShapes) {
  ir::Model model = parse(
      "  %r: f32[64] = ReduceSum(%x) {name=\"row\", axes=[1], keepdims=0}\n"
      "  %c: f32[64] = ReduceSum(%y) {name=\"col\", axes=[0], keepdims=0}\n"
      "  return %r, %c\n",
      "%x: f32[64,128], %y: f32[32,64]");
  PatternScore score = score_of(model, {0, 1});
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason,
            "column reduction \"col\" (ReduceSum) over [32,64] and row reduction \"row\" "
            "(ReduceSum) over [64,128] need different thread mappings; no composition can "
            "express it");
}

TEST(ScorePatternTest, OpaqueOpIsInfeasible) {
  ir::Model model = parse(
      "  %t: f32[1,1,8,8] = Relu(%x) {name=\"relu\"}\n"
      "  %z: f32[1,1,8,8] = CumSum(%t, %axis) {name=\"cumsum\"}\n"
      "  return %z\n",
      "%x: f32[1,1,8,8], %axis: i64[]");
  PatternScore score = score_of(model, {0, 1});
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.score_us, -1);
  EXPECT_EQ(score.reason,
            "node \"cumsum\" (CumSum) is an Opaque op that runs as its own kernel; no "
            "composition can express it");
}

// Pools and depthwise convolutions are stencils: they fuse with their producers. A
// grouped Conv over 16 input channels per group stays a cuDNN call.
TEST(ScorePatternTest, StencilsFuseUpToTheChannelLimit) {
  ir::Model model = parse(
      "  %t: f32[1,32,8,8] = Relu(%x) {name=\"relu\"}\n"
      "  %p: f32[1,32,4,4] = MaxPool(%t) {name=\"pool\", kernel_shape=[2, 2], strides=[2, 2]}\n"
      "  %d: f32[1,32,8,8] = Conv(%t, %dw) {name=\"depthwise\", group=32, pads=[1,1,1,1]}\n"
      "  %g: f32[1,32,8,8] = Conv(%t, %gw) {name=\"wide\", group=1, pads=[1,1,1,1]}\n"
      "  %h: f32[1,32,8,8] = Conv(%t, %hw) {name=\"grouped\", group=2, pads=[1,1,1,1]}\n"
      "  return %p, %d, %g, %h\n",
      "%x: f32[1,32,8,8], %dw: f32[32,1,3,3], %gw: f32[32,32,3,3], %hw: f32[32,16,3,3]");
  EXPECT_TRUE(score_of(model, {0, 1}).feasible);
  EXPECT_TRUE(score_of(model, {0, 2}).feasible);
  EXPECT_EQ(score_of(model, {0, 3}).reason,
            "node \"wide\" (Conv) is a convolution (a library call); no composition can "
            "express it");
  EXPECT_TRUE(score_of(model, {0, 4}).feasible);  // 16 channels per group: the limit
}

TEST(ScorePatternTest, LargeGemmIsInfeasibleSmallGemmFuses) {
  ir::Model large = parse(
      "  %t: f32[128,128] = MatMul(%a, %b) {name=\"mm\"}\n"
      "  %z: f32[128,128] = Relu(%t) {name=\"relu\"}\n"
      "  return %z\n",
      "%a: f32[128,128], %b: f32[128,128]");
  PatternScore score = score_of(large, {0, 1});
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason,
            "node \"mm\" (MatMul): GEMM m*n*k = 128*128*128 = 2097152 per batch is over the fused "
            "limit 64*64*64 = 262144; it runs as a library call");
  ir::Model small = parse(
      "  %t: f32[16,64,64] = MatMul(%a, %b) {name=\"mm\"}\n"
      "  %z: f32[16,64,64] = Relu(%t) {name=\"relu\"}\n"
      "  return %z\n",
      "%a: f32[16,64,64], %b: f32[16,64,64]");
  EXPECT_TRUE(score_of(small, {0, 1}).feasible);
}

TEST(ScorePatternTest, UnknownShapeIsInfeasible) {
  ir::Model model = parse(
      "  %t: f32[?,4] = Relu(%x) {name=\"relu\"}\n"
      "  %z: f32[?,4] = Exp(%t) {name=\"exp\"}\n"
      "  return %z\n",
      "%x: f32[?,4]");
  PatternScore score = score_of(model, {0, 1});
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason,
            "node \"relu\" (Relu): tensor \"x\" has no static shape and dtype (f32[?,4]); no "
            "composition can express it");
}

TEST(ScorePatternTest, TooManyKernelParameters) {
  ir::Model model = parse(kChain, kChainInputs);
  ScoreOptions options;
  options.max_kernel_parameter_bytes = 39;
  // x, y, z: 3 pointers (24 bytes) + one shape of 2 dims (16 bytes) = 40.
  PatternScore score = score_of(model, {0, 1}, options);
  EXPECT_FALSE(score.feasible);
  EXPECT_EQ(score.reason,
            "kernel parameters need 40 bytes (3 tensors, 1 distinct shapes), over the limit 39");
  options.max_kernel_parameter_bytes = 40;
  EXPECT_TRUE(score_of(model, {0, 1}, options).feasible);
}

TEST(ScorePatternTest, SingleNodeScoresZero) {
  ir::Model model = parse(kChain, kChainInputs);
  PatternScore score = score_of(model, {1});
  EXPECT_TRUE(score.feasible);
  EXPECT_EQ(score.score_us, 0.0);
  EXPECT_EQ(score.bytes_saved, 0);
}

TEST(EstimateTest, GroupAndPlan) {
  ir::Model model = parse(kChain, kChainInputs);
  DeviceProfile profile = test_profile();
  // Add alone: reads x, y and writes t: 12 MiB; 1048576 flops = 0.1 us, memory bound.
  GroupCost add = estimate_group(model.graph, {0}, profile);
  EXPECT_EQ(add.bytes, 12582912);
  EXPECT_EQ(add.flops, 1048576.0);
  // M(12 MiB): ln(12)/ln(1024) of the way: 29.77170821621419 us; + phi.
  expect_relative(add.time.total_us, 34.77170821621419);
  GroupCost fused = estimate_group(model.graph, {0, 1}, profile);
  EXPECT_EQ(fused.bytes, 12582912);  // x, y read; z written
  EXPECT_EQ(fused.flops, 2097152.0);
  expect_relative(fused.time.total_us, 34.77170821621419);

  PlanEstimate plan = estimate_plan(model.graph, {{0, 1}}, profile);
  EXPECT_EQ(plan.kernels_before, 2);
  EXPECT_EQ(plan.kernels_after, 1);
  EXPECT_EQ(plan.bytes_before, 12582912 + 8388608);  // Relu: reads t, writes z
  EXPECT_EQ(plan.bytes_after, 12582912);
  // before: (M(12 MiB) + 5) + (M(8 MiB) + 5).
  expect_relative(plan.time_before_us, 62.4436217297277);
  expect_relative(plan.time_after_us, 34.77170821621419);

  PlanEstimate unfused = estimate_plan(model.graph, {}, profile);
  EXPECT_EQ(unfused.kernels_after, 2);
  EXPECT_EQ(unfused.bytes_after, unfused.bytes_before);
  expect_relative(unfused.time_after_us, unfused.time_before_us);
}

TEST(EstimateTest, ComputeBoundGemm) {
  // 2 * 64 * 64 * 64 * 16 = 8388608 flops (0.8388608 us at 10 TFLOP/s); bytes: a, b
  // read and t written, 3 * 16 * 64 * 64 * 4 = 786432. Memory bound at 10 TFLOP/s,
  // compute bound at 1 GFLOP/s.
  ir::Model model = parse(
      "  %t: f32[16,64,64] = MatMul(%a, %b) {name=\"mm\"}\n"
      "  return %t\n",
      "%a: f32[16,64,64], %b: f32[16,64,64]");
  DeviceProfile profile = test_profile();
  GroupCost cost = estimate_group(model.graph, {0}, profile);
  EXPECT_EQ(cost.flops, 8388608.0);
  EXPECT_EQ(cost.bytes, 786432);
  expect_relative(cost.time.total_us,
                  std::max(memory_time_us(profile, 786432), 0.8388608) + profile.launch_latency_us);
  profile.fp32_flops_per_second = 1e9;  // now compute bound: 8388.608 us
  expect_relative(estimate_group(model.graph, {0}, profile).time.total_us, 8388.608 + 5);
}

TEST(EstimateTest, CompositionCharges) {
  ir::Model model = parse(kChain, kChainInputs);
  DeviceProfile profile = test_profile();
  // CUDA-core GEMM issue time: 1e6 multiply-adds one output per thread (60
  // instructions each) and 1e6 from shared tiles (10 each): 7e7 instructions / 32
  // lanes / (4 x 80 SMs x 1.5 GHz) = 4.557291666... us.
  KernelShape gemms;
  gemms.thread_gemm_macs = 1e6;
  gemms.tiled_gemm_macs = 1e6;
  expect_relative(cuda_core_gemm_us(gemms, profile), 7e7 / 32 / 4.8e11 * 1e6);

  // The chain in the global composition: 2 grid barriers and t (4 MiB) through the
  // workspace, written and read back: phi + M(12 MiB + 8 MiB) + 2 x 1.5 us; the
  // charge is what that adds to the plain estimate (M(12 MiB) + phi).
  KernelShape global;
  global.global = true;
  global.grid_barriers = 2;
  global.workspace_bytes = 4194304;
  GroupCost plain = estimate_group(model.graph, {0, 1}, profile);
  EXPECT_DOUBLE_EQ(plain.time.charge_us(), 0.0);
  EXPECT_EQ(plain.time.bound, Bound::kMemory);
  GroupCost charged = estimate_group(model.graph, {0, 1}, profile, &global);
  const double expected = 5 + memory_time_us(profile, 12582912.0 + 8388608.0) + 3.0;
  expect_relative(charged.time.total_us, expected);
  expect_relative(charged.time.plain_us, 34.77170821621419);
  expect_relative(charged.time.charge_us(), expected - 34.77170821621419);
  EXPECT_EQ(charged.bytes, plain.bytes);
  // The charge's parts, named: the workspace round trip inside the DRAM term, the
  // barriers after everything else.
  expect_relative(
      charged.time.charges.workspace_us,
      memory_time_us(profile, 12582912.0 + 8388608.0) - memory_time_us(profile, 12582912.0));
  EXPECT_DOUBLE_EQ(charged.time.charges.grid_barriers_us, 3.0);
  EXPECT_DOUBLE_EQ(charged.time.sync_us, 3.0);
  EXPECT_EQ(charged.time.bound, Bound::kMemory);
  // With the grid's block count known, each barrier is priced at it
  // (grid_barrier_time_us): 4 blocks per SM add 3 x sm_count atomics to each.
  global.grid_blocks = 4 * profile.sm_count;
  GroupCost wide = estimate_group(model.graph, {0, 1}, profile, &global);
  expect_relative(wide.time.charges.grid_barriers_us,
                  2 * (1.5 + 3.0 * profile.sm_count * profile.atomic_same_address_ns * 1e-3));

  // GEMM issue time above the memory time replaces it in the max.
  KernelShape heavy;
  heavy.thread_gemm_macs = 1e9;  // 3906.25 us of issue
  const KernelTime issued = estimate_group(model.graph, {0, 1}, profile, &heavy).time;
  expect_relative(issued.total_us, 5 + 3906.25);
  expect_relative(issued.charges.gemm_instructions_us, 3906.25);
  EXPECT_EQ(issued.bound, Bound::kCompute);

  // A chain of 1e6 recomputed dot-product loads per lane, a share of them waited out
  // at 130 ns each, above the memory time, replaces it in the max too.
  KernelShape chained;
  chained.load_chain = 1e6;
  expect_relative(estimate_group(model.graph, {0, 1}, profile, &chained).time.total_us,
                  5 + 1e6 * 0.17 * 130 * 1e-3);
  // The CUDA-core GEMMs' own chain adds its share of waits to the same term.
  chained.gemm_load_chain = 2e6;
  const KernelTime waited = estimate_group(model.graph, {0, 1}, profile, &chained).time;
  expect_relative(waited.total_us, 5 + (1e6 * 0.17 + 2e6 * 0.5) * 130 * 1e-3);
  expect_relative(waited.charges.load_chain_us, 1e6 * 0.17 * 130 * 1e-3);
  expect_relative(waited.charges.gemm_load_chain_us, 2e6 * 0.5 * 130 * 1e-3);
  EXPECT_DOUBLE_EQ(waited.charges.stencil_load_chain_us, 0.0);
  EXPECT_EQ(waited.bound, Bound::kLatency);
}

TEST(ScoreEpilogueTest, GemmBiasRelu) {
  // Two f32[1024,1024] intermediates (4 MiB each), each neither written nor read:
  // V_saved = 2 * 2 * 4 MiB = 16777216. Alone, mm moves a, b, t (8 MiB), bias t, bias,
  // u (8 MiB + 4 KiB), relu u, y (8 MiB); the chain moves a, b, bias, y (8 MiB +
  // 4 KiB): f = 2 * M(8 MiB) + 2 * (5 + 0.01) = 2 * 8388608 / 370e9 * 1e6 + 10.02 =
  // 55.3638 us (0.01: kEpilogueTieBreakUs per absorbed op).
  ir::Model model = parse(
      "  %t: f32[1024,1024] = MatMul(%a, %b) {name=\"mm\"}\n"
      "  %u: f32[1024,1024] = Add(%t, %bias) {name=\"bias\"}\n"
      "  %y: f32[1024,1024] = Relu(%u) {name=\"relu\"}\n"
      "  return %y\n",
      "%a: f32[1024,512], %b: f32[512,1024], %bias: f32[1024]");
  PatternScore score = score_epilogue(model.graph, {0, 1, 2}, test_profile(), ScoreOptions{});
  EXPECT_TRUE(score.feasible);
  EXPECT_EQ(score.bytes_saved, 16777216);
  EXPECT_EQ(score.num_kernels_replaced, 3);
  expect_relative(score.score_us, 2 * 8388608 / 370e9 * 1e6 + 10.02);
  EXPECT_NEAR(score.score_us, 55.3638, 1e-4);
  // Prefix {mm, bias}: one intermediate, V_saved = 8 MiB; alone 8 MiB and 8 MiB + 4 KiB,
  // together 8 MiB + 4 KiB: M(8 MiB) with bw = 370e9, + one phi and tie-break.
  PatternScore prefix = score_epilogue(model.graph, {0, 1}, test_profile(), ScoreOptions{});
  EXPECT_EQ(prefix.bytes_saved, 8388608);
  expect_relative(prefix.score_us, 8388608 / 370e9 * 1e6 + 5.01);
  // The launch latency override applies as in score_pattern.
  ScoreOptions no_launch;
  no_launch.launch_latency_us_override = 0;
  expect_relative(score_epilogue(model.graph, {0, 1, 2}, test_profile(), no_launch).score_us,
                  2 * 8388608 / 370e9 * 1e6 + 0.02);
}

}  // namespace
}  // namespace stitch::cost_model
