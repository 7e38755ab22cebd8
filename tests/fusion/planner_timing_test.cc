// The planner's timing rounds (fusion/planner.h, CandidateTimer): which candidates
// are timed, how timings become scores, what is dropped and what the report hears.
// The timer here answers from a table so that each rule shows; the emulated timer
// itself is exercised end to end by tests/runtime/score_emulated.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "ir/core/op_registry.h"
#include "tests/fusion/fusion_test_util.h"
#include "tests/mini_attention_ir.h"

namespace stitch::fusion {
namespace {

using test_util::h100;
using test_util::node_named;
using test_util::parse_ir;

// Attention in miniature: two small batched GEMMs (fusible) around a softmax.
constexpr const char* kAttention = test_samples::kMiniAttention;

bool has_gemm(const ir::Graph& graph, const Pattern& pattern) {
  return std::any_of(pattern.nodes.begin(), pattern.nodes.end(), [&](ir::NodeId id) {
    return ir::op_kind(graph.node(id)) == ir::OpKind::kGemm;
  });
}

// Candidates with a GEMM take 100 us fused against 50 unfused; the others 5 against
// 10 per node less 1 (bigger groups save more). `time_gemm` false: candidates with a
// GEMM cannot be timed.
class TableTimer : public CandidateTimer {
 public:
  explicit TableTimer(bool time_gemm) : time_gemm_(time_gemm) {}
  std::string_view method() const override { return "table"; }
  Result<std::vector<std::optional<CandidateTiming>>> time(
      const ir::Graph& graph, const std::vector<Pattern>& candidates,
      const std::vector<size_t>& which) override {
    std::vector<std::optional<CandidateTiming>> timings;
    for (size_t index : which) {
      asked.push_back(candidates[index].nodes);
      bool gemm = has_gemm(graph, candidates[index]);
      if (gemm && !time_gemm_) {
        timings.emplace_back();
        continue;
      }
      double launches = static_cast<double>(candidates[index].nodes.size());
      timings.push_back(CandidateTiming{"table", gemm ? 100.0 : 5.0,
                                        gemm ? 50.0 : 10.0 * launches - 1.0,
                                        gemm ? "global" : "warp", "memory"});
    }
    return timings;
  }
  std::vector<std::vector<ir::NodeId>> asked;

 private:
  bool time_gemm_;
};

TEST(PlannerTimingTest, SlowerFusedCandidatesAreRejectedAndSaid) {
  ir::Model model = parse_ir(kAttention);
  const ir::Graph& graph = model.graph;
  // Without a timer the analytic score fuses a GEMM with the softmax.
  Result<PlannerResult> analytic = plan_fusion(graph, h100(), PlannerOptions{});
  ASSERT_TRUE(analytic.is_ok()) << analytic.status().message();
  ASSERT_FALSE(analytic->groups.empty());
  EXPECT_EQ(analytic->groups.front().category, artifact::GroupCategory::kGemm);
  EXPECT_EQ(analytic->score_method, "analytic");

  TableTimer timer(/*time_gemm=*/true);
  PlannerOptions options;
  options.timer = &timer;
  Result<PlannerResult> result = plan_fusion(graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->score_method, "table");
  EXPECT_GE(result->timing_rounds, 1);
  // The GEMM candidates were timed (they must be), found slower, and rejected.
  ASSERT_FALSE(result->rejected.empty());
  for (const RejectedCandidate& rejected : result->rejected) {
    EXPECT_DOUBLE_EQ(rejected.timing.fused_us, 100.0);
    EXPECT_GT(rejected.analytic_score_us, 0.0);
  }
  // The softmax alone is the group, scored by its timing: 10 * 5 - 1 - 5 us saved.
  std::string groups;
  for (const PlannedGroup& planned : result->groups) {
    groups += "[";
    for (ir::NodeId id : planned.nodes) groups += graph.node(id).name + " ";
    groups += "] ";
  }
  ASSERT_EQ(result->groups.size(), 1u) << groups;
  const PlannedGroup& group = result->groups.front();
  EXPECT_EQ(group.category, artifact::GroupCategory::kReduction);
  ASSERT_TRUE(group.timing.has_value());
  EXPECT_DOUBLE_EQ(group.score_us, 44.0);
  EXPECT_EQ(group.nodes,
            (std::vector<ir::NodeId>{node_named(graph, "max"), node_named(graph, "sub"),
                                     node_named(graph, "exp"), node_named(graph, "sum"),
                                     node_named(graph, "div")}));
  // Both GEMMs run alone, in cuBLAS, and say why.
  for (const char* name : {"qk", "pv"}) {
    auto unfused =
        std::find_if(result->unfused.begin(), result->unfused.end(),
                     [&](const UnfusedNode& node) { return node.node == node_named(graph, name); });
    ASSERT_NE(unfused, result->unfused.end()) << name;
    EXPECT_EQ(unfused->kind, UnfusedKind::kLibraryCall);
    EXPECT_NE(unfused->reason.find("estimated slower fused (100.00 us, global composition"),
              std::string::npos)
        << unfused->reason;
    EXPECT_NE(unfused->reason.find("than unfused (50.00 us) by the table profile"),
              std::string::npos)
        << unfused->reason;
  }
  // The softmax was timed as the trusted alternative of a GEMM candidate, in the
  // same round.
  const std::vector<ir::NodeId>& softmax = group.nodes;
  EXPECT_NE(std::find(timer.asked.begin(), timer.asked.end(), softmax), timer.asked.end());
}

TEST(PlannerTimingTest, UntimedCandidatesThatMustBeTimedAreDropped) {
  ir::Model model = parse_ir(kAttention);
  const ir::Graph& graph = model.graph;
  TableTimer timer(/*time_gemm=*/false);
  PlannerOptions options;
  options.timer = &timer;
  Result<PlannerResult> result = plan_fusion(graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_GT(result->untimable, 0);
  EXPECT_TRUE(result->rejected.empty());
  for (const PlannedGroup& group : result->groups) {
    EXPECT_NE(group.category, artifact::GroupCategory::kGemm);
  }
}

TEST(PlannerTimingTest, CompositionChargesDropWhatTheyOutweigh) {
  ir::Model model = parse_ir(kAttention);
  const ir::Graph& graph = model.graph;
  // A composition where the GEMMs take a second of CUDA-core issue time each.
  PlannerOptions options;
  int asked = 0;
  options.kernel_shape =
      [&](const ir::Graph& g,
          const std::vector<ir::NodeId>& nodes) -> std::optional<cost_model::KernelShape> {
    ++asked;
    cost_model::KernelShape shape;
    for (ir::NodeId id : nodes) {
      if (ir::op_kind(g.node(id)) == ir::OpKind::kGemm) shape.thread_gemm_macs += 1e12;
    }
    return shape;
  };
  Result<PlannerResult> result = plan_fusion(graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_GT(asked, 0);
  EXPECT_GT(result->charged_out, 0);
  ASSERT_FALSE(result->groups.empty());
  for (const PlannedGroup& group : result->groups) {
    EXPECT_NE(group.category, artifact::GroupCategory::kGemm);
    EXPECT_DOUBLE_EQ(group.charge_us, 0.0);  // the softmax: nothing to charge
  }
}

// A depthwise conv whose own kernel is latency-bound (its load chain) and the ReLU
// after it: fused, the kernel walks the same chain, so the pair is charged only what
// the ReLU adds and is planned. Charged the conv's whole chain against a conv alone
// counted at its bytes, the pair would be dropped and the ReLU left alone.
TEST(PlannerTimingTest, ChargesCountWhatAStencilAloneAlreadyCosts) {
  ir::Model model = parse_ir(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "dw_relu" (%x: f32[1,8,16,16], %w: f32[8,1,3,3]) {
  %d: f32[1,8,16,16] = Conv(%x, %w) {name="dw", group=8, pads=[1,1,1,1]}
  %y: f32[1,8,16,16] = Relu(%d) {name="relu"}
  return %y
}
)");
  const ir::Graph& graph = model.graph;
  PlannerOptions options;
  std::vector<size_t> asked;
  options.kernel_shape =
      [&](const ir::Graph& g,
          const std::vector<ir::NodeId>& nodes) -> std::optional<cost_model::KernelShape> {
    asked.push_back(nodes.size());
    cost_model::KernelShape shape;
    for (ir::NodeId id : nodes) {
      if (ir::op_kind(g.node(id)) == ir::OpKind::kStencil) shape.stencil_load_chain += 1e5;
    }
    return shape;
  };
  Result<PlannerResult> result = plan_fusion(graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_NE(std::find(asked.begin(), asked.end(), 1u), asked.end());  // the conv alone
  EXPECT_EQ(result->charged_out, 0);
  ASSERT_EQ(result->groups.size(), 1u);
  EXPECT_EQ(result->groups[0].nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(result->groups[0].charge_us, 0.0);  // the chain, less the conv's own
}

TEST(PlannerTimingTest, UnfusedGemmsAreLibraryCallsWhateverTheirSize) {
  ir::Model model = parse_ir(kAttention);
  PlannerOptions options;
  options.candidates.substitution = false;
  options.candidates.exploratory = false;
  options.candidates.packing = false;
  options.candidates.epilogue = false;
  options.candidates.attention = false;
  options.partition.attention = false;
  Result<PlannerResult> result = plan_fusion(model.graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  int library = 0;
  for (const UnfusedNode& node : result->unfused) {
    if (node.kind == UnfusedKind::kLibraryCall) ++library;
  }
  EXPECT_EQ(library, 2);
  // The two GEMMs are library calls before and after: 5 memory-intensive kernels.
  EXPECT_EQ(result->memory_intensive_before, 5);
  EXPECT_EQ(result->memory_intensive_after, 5);
}

}  // namespace
}  // namespace stitch::fusion
