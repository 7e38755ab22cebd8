// The device profile's ranges keep every score finite (issue 36 R9: a launch latency
// of 1e308 us, or a rate of 1e-308, made a fusion score infinite and the compile
// exit 1): every pattern of a graph of 4 GiB tensors, scored with the slowest and the
// fastest device the ranges allow, has a finite score.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "ir/text/text.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {

// A softmax over rows of 16384 floats, then a GEMM: reductions, broadcasts, a
// library call, and tensors of 4 GiB (1 << 32 bytes).
constexpr const char* kGraph = R"(stitchopt.ir 1
model ir_version=7 opsets={"":11}
graph "g" (%x: f32[65536,16384], %w: f32[16384,64]) {
  %m: f32[65536,1] = ReduceMax(%x) {name="max", axes=[1], keepdims=1}
  %d: f32[65536,16384] = Sub(%x, %m) {name="sub"}
  %e: f32[65536,16384] = Exp(%d) {name="exp"}
  %s: f32[65536,1] = ReduceSum(%e) {name="sum", axes=[1], keepdims=1}
  %p: f32[65536,16384] = Div(%e, %s) {name="div"}
  %mm: f32[65536,64] = MatMul(%p, %w) {name="mm"}
  %t: f32[65536,64] = Tanh(%mm) {name="tanh"}
  return %t
}
)";

// Every rate at the bottom of its range and every latency at the top.
DeviceProfile slowest() {
  DeviceProfile profile = test_util::test_profile();
  profile.sm_count = 1;
  profile.max_threads_per_sm = 1024;
  profile.shared_memory_per_block_optin = 49152;
  profile.shared_memory_per_sm = 49152;
  profile.peak_dram_bytes_per_second = 1e9;
  profile.bandwidth_curve = {{1, 1e3}, {1e15, 1e3}};
  profile.launch_latency_us = 1e6;
  profile.fp32_flops_per_second = 1e9;
  profile.fp16_flops_per_second = 1e9;
  profile.fp64_flops_per_second = 1e8;
  profile.sm_clock_hz = 1e8;
  profile.max_blocks_per_sm = 1;
  profile.l2_bytes_per_second = 1e9;
  profile.block_barrier_cycles = 1e5;
  profile.grid_barrier_us = 1e6;
  profile.atomic_same_address_ns = 1e6;
  profile.global_load_latency_ns = 1e6;
  profile.library_efficiency = 1e-3;
  return profile;
}

// Every rate at the top of its range and every latency at the bottom.
DeviceProfile fastest() {
  DeviceProfile profile = test_util::test_profile();
  profile.sm_count = 4096;
  profile.max_threads_per_block = 4096;
  profile.max_threads_per_sm = 65536;
  profile.registers_per_block = 1048576;
  profile.registers_per_sm = 1048576;
  profile.shared_memory_per_block_optin = 4194304;
  profile.shared_memory_per_sm = 4194304;
  profile.peak_dram_bytes_per_second = 1e15;
  profile.bandwidth_curve = {{1, 1e15}, {1e15, 1e15}};
  profile.launch_latency_us = 0;
  profile.fp32_flops_per_second = 1e18;
  profile.fp16_flops_per_second = 1e18;
  profile.fp64_flops_per_second = 1e18;
  profile.sm_clock_hz = 1e11;
  profile.max_blocks_per_sm = 1024;
  profile.l2_bytes_per_second = 1e16;
  profile.block_barrier_cycles = 1;
  profile.grid_barrier_us = 1e-3;
  profile.atomic_same_address_ns = 1e-3;
  profile.global_load_latency_ns = 1;
  profile.library_efficiency = 1;
  return profile;
}

TEST(ProfileCornersTest, EveryScoreIsFiniteAtTheEndsOfTheRanges) {
  Result<ir::Model> model = ir::parse_model(kGraph, "corners.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ir::Graph& graph = model->graph;
  const int nodes = static_cast<int>(graph.num_nodes());
  ASSERT_EQ(nodes, 7);
  for (const DeviceProfile& profile : {slowest(), fastest()}) {
    ASSERT_TRUE(validate_device_profile(profile, "corner").is_ok())
        << validate_device_profile(profile, "corner").message();
    PatternScorer scorer(graph, profile, ScoreOptions{});
    int feasible = 0;
    for (int mask = 1; mask < (1 << nodes); ++mask) {
      std::vector<ir::NodeId> pattern;
      for (ir::NodeId id = 0; id < nodes; ++id) {
        if ((mask >> id) & 1) pattern.push_back(id);
      }
      PatternScore score = scorer.score(pattern);
      if (!score.feasible) continue;
      ++feasible;
      EXPECT_TRUE(std::isfinite(score.score_us)) << "mask " << mask << ": " << score.score_us;
    }
    EXPECT_GT(feasible, 0);
  }
}

}  // namespace
}  // namespace stitch::cost_model
