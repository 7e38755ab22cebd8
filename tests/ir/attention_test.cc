// Tests of the attention-core matcher (ir/core/attention.h): the forms exporters
// write (a bare softmax, a scale, an additive mask, a causal Where), the refusals
// (scores read elsewhere, a softmax over another axis, mixed float types), and head
// dims reported whatever their size (the limit is fusion's, tests/fusion/
// fusion_policy_test.cc).
#include "ir/core/attention.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/ir/ir_test_util.h"

namespace stitch::ir {
namespace {

using test_util::node_named;
using test_util::parse_graph;

constexpr const char* kInputs = "%q: f32[2,4,16,8], %k: f32[2,4,8,24], %v: f32[2,4,24,12]";

// The softmax opened as the decompose pass writes it, of %x, then P x V.
std::string softmax_and_pv(const std::string& dtype = "f32") {
  return "  %m: " + dtype + "[2,4,16,1] = ReduceMax(%x) {name=\"max\", axes=[3], keepdims=1}\n" +
         "  %d: " + dtype + "[2,4,16,24] = Sub(%x, %m) {name=\"sub\"}\n" + "  %e: " + dtype +
         "[2,4,16,24] = Exp(%d) {name=\"exp\"}\n" + "  %z: " + dtype +
         "[2,4,16,1] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n" + "  %p: " + dtype +
         "[2,4,16,24] = Div(%e, %z) {name=\"div\"}\n" + "  %o: " + dtype +
         "[2,4,16,12] = MatMul(%p, %v) {name=\"pv\"}\n";
}

TEST(AttentionTest, MatchesABareSoftmaxBetweenTwoMatMuls) {
  Model model = parse_graph(kInputs,
                            "  %axes: i64[1] = dense<i64[1]>[3]\n"
                            "  %x: f32[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n" +
                                softmax_and_pv());
  const Graph& graph = model.graph;
  std::string why;
  std::optional<AttentionCore> core = match_attention_core(graph, node_named(graph, "pv"), &why);
  ASSERT_TRUE(core.has_value()) << why;
  EXPECT_EQ(core->scores_gemm, node_named(graph, "qk"));
  EXPECT_TRUE(core->score_chain.empty());
  EXPECT_EQ(core->scores, core->logits);
  EXPECT_EQ(core->batch, 8);
  EXPECT_EQ(core->batch_dims, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(core->lq, 16);
  EXPECT_EQ(core->lk, 24);
  EXPECT_EQ(core->d, 8);
  EXPECT_EQ(core->dv, 12);
  EXPECT_EQ(core->nodes().size(), 7u);
  EXPECT_EQ(find_attention_cores(graph).size(), 1u);
  // The QK^T MatMul ends no attention.
  EXPECT_FALSE(match_attention_core(graph, node_named(graph, "qk"), &why).has_value());
}

TEST(AttentionTest, FollowsTheScoreChainOfScaleMaskAndCausalWhere) {
  Model model =
      parse_graph(std::string(kInputs) + ", %mask: f32[2,1,1,24], %causal: bool[1,1,16,24]",
                  "  %axes: i64[1] = dense<i64[1]>[3]\n"
                  "  %scale: f32[] = dense<f32[]>[0.35]\n"
                  "  %low: f32[] = dense<f32[]>[-10000]\n"
                  "  %s: f32[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n"
                  "  %t: f32[2,4,16,24] = Div(%s, %scale) {name=\"scale\"}\n"
                  "  %w: f32[2,4,16,24] = Where(%causal, %t, %low) {name=\"causal\"}\n"
                  "  %x: f32[2,4,16,24] = Add(%w, %mask) {name=\"mask\"}\n" +
                      softmax_and_pv());
  const Graph& graph = model.graph;
  std::string why;
  std::optional<AttentionCore> core = match_attention_core(graph, node_named(graph, "pv"), &why);
  ASSERT_TRUE(core.has_value()) << why;
  EXPECT_EQ(core->score_chain,
            (std::vector<NodeId>{node_named(graph, "scale"), node_named(graph, "causal"),
                                 node_named(graph, "mask")}));
  EXPECT_EQ(core->nodes().size(), 10u);
}

TEST(AttentionTest, RefusesScoresReadOutsideTheAttention) {
  Model model = parse_graph(kInputs,
                            "  %axes: i64[1] = dense<i64[1]>[3]\n"
                            "  %x: f32[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n" +
                                softmax_and_pv(),
                            "%o, %p");
  std::string why;
  EXPECT_FALSE(match_attention_core(model.graph, node_named(model.graph, "pv"), &why).has_value());
  EXPECT_NE(why.find("softmax"), std::string::npos) << why;
}

TEST(AttentionTest, RefusesASoftmaxOverAnotherAxis) {
  Model model =
      parse_graph("%q: f32[2,4,16,8], %k: f32[2,4,8,16], %v: f32[2,4,16,12]",
                  "  %axes: i64[1] = dense<i64[1]>[2]\n"
                  "  %x: f32[2,4,16,16] = MatMul(%q, %k) {name=\"qk\"}\n"
                  "  %m: f32[2,4,1,16] = ReduceMax(%x) {name=\"max\", axes=[2], keepdims=1}\n"
                  "  %d: f32[2,4,16,16] = Sub(%x, %m) {name=\"sub\"}\n"
                  "  %e: f32[2,4,16,16] = Exp(%d) {name=\"exp\"}\n"
                  "  %z: f32[2,4,1,16] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n"
                  "  %p: f32[2,4,16,16] = Div(%e, %z) {name=\"div\"}\n"
                  "  %o: f32[2,4,16,12] = MatMul(%p, %v) {name=\"pv\"}\n");
  std::string why;
  EXPECT_FALSE(match_attention_core(model.graph, node_named(model.graph, "pv"), &why).has_value());
  EXPECT_NE(why.find("last axis"), std::string::npos) << why;
}

TEST(AttentionTest, MatchesFloat16AndRefusesMixedTypes) {
  Model model = parse_graph("%q: f16[2,4,16,8], %k: f16[2,4,8,24], %v: f16[2,4,24,12]",
                            "  %axes: i64[1] = dense<i64[1]>[3]\n"
                            "  %x: f16[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n" +
                                softmax_and_pv("f16"));
  std::string why;
  std::optional<AttentionCore> core =
      match_attention_core(model.graph, node_named(model.graph, "pv"), &why);
  ASSERT_TRUE(core.has_value()) << why;
  EXPECT_EQ(core->dtype, DType::kFloat16);
  Model mixed =
      parse_graph("%q: f16[2,4,16,8], %k: f16[2,4,8,24], %v: f32[2,4,24,12]",
                  "  %axes: i64[1] = dense<i64[1]>[3]\n"
                  "  %x: f16[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n"
                  "  %m: f16[2,4,16,1] = ReduceMax(%x) {name=\"max\", axes=[3], keepdims=1}\n"
                  "  %d: f16[2,4,16,24] = Sub(%x, %m) {name=\"sub\"}\n"
                  "  %e: f16[2,4,16,24] = Exp(%d) {name=\"exp\"}\n"
                  "  %z: f16[2,4,16,1] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n"
                  "  %p: f16[2,4,16,24] = Div(%e, %z) {name=\"div\"}\n"
                  "  %pf: f32[2,4,16,24] = Cast(%p) {name=\"cast\", to=1}\n"
                  "  %o: f32[2,4,16,12] = MatMul(%pf, %v) {name=\"pv\"}\n");
  EXPECT_FALSE(match_attention_core(mixed.graph, node_named(mixed.graph, "pv"), &why).has_value());
}

// A 512-wide head is a fact the matcher reports, not a refusal: ir/ holds no fusion
// policy (fusion/fusion_policy.h refuses it; tests/fusion/fusion_policy_test.cc).
TEST(AttentionTest, ReportsHeadDimsWithoutALimit) {
  Model model =
      parse_graph("%q: f32[2,16,512], %k: f32[2,512,24], %v: f32[2,24,640]",
                  "  %axes: i64[1] = dense<i64[1]>[2]\n"
                  "  %x: f32[2,16,24] = MatMul(%q, %k) {name=\"qk\"}\n"
                  "  %m: f32[2,16,1] = ReduceMax(%x) {name=\"max\", axes=[2], keepdims=1}\n"
                  "  %d: f32[2,16,24] = Sub(%x, %m) {name=\"sub\"}\n"
                  "  %e: f32[2,16,24] = Exp(%d) {name=\"exp\"}\n"
                  "  %z: f32[2,16,1] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n"
                  "  %p: f32[2,16,24] = Div(%e, %z) {name=\"div\"}\n"
                  "  %o: f32[2,16,640] = MatMul(%p, %v) {name=\"pv\"}\n");
  const NodeId pv = node_named(model.graph, "pv");
  std::string why;
  std::optional<AttentionCore> core = match_attention_core(model.graph, pv, &why);
  ASSERT_TRUE(core.has_value()) << why;
  EXPECT_EQ(core->d, 512);
  EXPECT_EQ(core->dv, 640);
  EXPECT_EQ(find_attention_cores(model.graph).size(), 1u);
}

}  // namespace
}  // namespace stitch::ir
