// PatternScorer: one scorer reused across many patterns gives exactly what a fresh
// score_pattern call gives (its per-pattern scratch never leaks from one pattern
// into the next), for feasible patterns and for every kind of refusal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "ir/text/text.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {

// cost_model_test.cc's profile with `optin` bytes of shared memory.
DeviceProfile profile_with_optin(int64_t optin) {
  DeviceProfile profile = test_util::test_profile();
  profile.shared_memory_per_block_optin = optin;
  return profile;
}

// Twelve nodes with everything the score looks at: row reductions broadcast back
// (shared memory), a small op read over a larger shape (recomputation), a View, a
// column reduction over another shape (no common thread mapping), a GEMM, tensors
// read by several nodes, and graph outputs in the middle.
constexpr const char* kGraph = R"(stitchopt.ir 1
model ir_version=7 opsets={"":11}
graph "g" (%x: f32[64,128], %bias: f32[128], %w: f32[128,32]) {
  %shape: i64[2] = dense<i64[2]>[128, 64]
  %in: f32[64,128] = Add(%x, %bias) {name="add"}
  %m: f32[64,1] = ReduceMax(%in) {name="max", axes=[1], keepdims=1}
  %d: f32[64,128] = Sub(%in, %m) {name="sub"}
  %e: f32[64,128] = Exp(%d) {name="exp"}
  %s: f32[64,1] = ReduceSum(%e) {name="sum", axes=[1], keepdims=1}
  %p: f32[64,128] = Div(%e, %s) {name="div"}
  %r: f32[128,64] = Reshape(%p, %shape) {name="reshape"}
  %c: f32[1,64] = ReduceSum(%r) {name="col", axes=[0], keepdims=1}
  %g: f32[128] = Sigmoid(%bias) {name="sigmoid"}
  %q: f32[64,128] = Mul(%p, %g) {name="mul"}
  %mm: f32[64,32] = MatMul(%q, %w) {name="mm"}
  %t: f32[64,32] = Tanh(%mm) {name="tanh"}
  return %c, %t, %e
}
)";

void expect_same(const PatternScore& actual, const PatternScore& expected,
                 const std::vector<ir::NodeId>& nodes) {
  std::string label = "pattern {";
  for (ir::NodeId id : nodes) label += std::to_string(id) + ",";
  label += "}";
  EXPECT_EQ(actual.feasible, expected.feasible) << label;
  EXPECT_EQ(actual.reason, expected.reason) << label;
  EXPECT_EQ(actual.score_us, expected.score_us) << label;  // bit for bit
  EXPECT_EQ(actual.bytes_saved, expected.bytes_saved) << label;
  EXPECT_EQ(actual.recompute_bytes, expected.recompute_bytes) << label;
  EXPECT_EQ(actual.shared_memory_bytes, expected.shared_memory_bytes) << label;
  EXPECT_EQ(actual.num_kernels_replaced, expected.num_kernels_replaced) << label;
}

TEST(PatternScorerTest, ReusedScorerMatchesFreshScoresOnEverySubset) {
  Result<ir::Model> model = ir::parse_model(kGraph, "test.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ir::Graph& graph = model->graph;
  ASSERT_EQ(graph.num_nodes(), 12);

  ScoreOptions tight;
  tight.max_reductions_per_kernel = 2;
  tight.max_kernel_parameter_bytes = 64;
  tight.launch_latency_us_override = 0.5;
  struct Case {
    DeviceProfile profile;
    ScoreOptions options;
  };
  // Roomy: mostly feasible. Tight: refusals by reduction count and parameter bytes.
  // Small shared memory: two staged rows (2 * 512 bytes) do not fit in 600.
  const std::vector<Case> cases = {{profile_with_optin(100 * 1024), ScoreOptions{}},
                                   {profile_with_optin(100 * 1024), tight},
                                   {profile_with_optin(600), ScoreOptions{}}};
  for (const Case& test_case : cases) {
    PatternScorer scorer(graph, test_case.profile, test_case.options);
    int feasible = 0;
    int refused = 0;
    // Every non-empty subset, twice: ascending and descending masks, so each pattern
    // follows different predecessors in the reused scorer.
    for (int pass = 0; pass < 2; ++pass) {
      for (int step = 1; step < (1 << 12); ++step) {
        int mask = pass == 0 ? step : (1 << 12) - step;
        std::vector<ir::NodeId> nodes;
        for (ir::NodeId id = 0; id < 12; ++id) {
          if ((mask >> id) & 1) nodes.push_back(id);
        }
        PatternScore reused = scorer.score(nodes);
        expect_same(reused, score_pattern(graph, nodes, test_case.profile, test_case.options),
                    nodes);
        (reused.feasible ? feasible : refused) += 1;
      }
    }
    EXPECT_GT(feasible, 0);
    EXPECT_GT(refused, 0);
  }
}

TEST(PatternScorerTest, NodeOrderDoesNotMatter) {
  Result<ir::Model> model = ir::parse_model(kGraph, "test.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  DeviceProfile profile = profile_with_optin(100 * 1024);
  PatternScorer scorer(model->graph, profile, ScoreOptions{});
  PatternScore sorted = scorer.score({1, 2, 3, 4, 5});
  ASSERT_TRUE(sorted.feasible) << sorted.reason;
  EXPECT_GT(sorted.shared_memory_bytes, 0);
  expect_same(scorer.score({5, 3, 1, 4, 2}), sorted, {5, 3, 1, 4, 2});
}

}  // namespace
}  // namespace stitch::cost_model
