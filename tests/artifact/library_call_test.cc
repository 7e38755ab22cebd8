// Tests for artifact/library_call: lone_call_epilogue for the library calls the plan
// leaves unfused, and bind_epilogue matching a recorded epilogue's ops
// (artifact/library_epilogue.h) to a call's body, with ir/core/opened_ops.h's matchers.
#include "artifact/library_call.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/opened_ops.h"
#include "ir/text/text.h"
#include "tests/ir/ir_test_util.h"

namespace stitch::artifact {
namespace {

using ir::opened_gelu_tanh;
using ir::opened_hard_swish;
using ir::test_util::node_named;

ir::Model parse(const std::string& text) {
  Result<ir::Model> model =
      ir::parse_model("stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\n" + text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

TEST(LibraryCallTest, LoneCallsLibraryAndEpilogue) {
  ir::Model model = parse(R"(graph "g" (%a: f32[4,8], %w: f32[8,6], %c: f32[6], %z: f32[4,6],
               %x: f32[1,3,8,8], %k: f32[2,3,3,3], %b: f32[2]) {
  %m: f32[4,6] = MatMul(%a, %w) {name="matmul"}
  %g: f32[4,6] = Gemm(%a, %w, %c) {name="gemm_bias"}
  %r: f32[4,6] = Gemm(%a, %w, %z) {name="gemm_residual", beta=0.5}
  %s: f32[4,6] = Gemm(%a, %w, %c) {name="gemm_scaled_bias", beta=0.5}
  %y: f32[1,2,6,6] = Conv(%x, %k, %b) {name="conv"}
  %p: f32[1,3,4,4] = MaxPool(%x) {name="pool", kernel_shape=[2, 2], strides=[2, 2]}
  %e: f32[4,6] = Relu(%m) {name="relu"}
  return %g, %r, %s, %y, %p, %e
})");
  const ir::Graph& graph = model.graph;
  auto of = [&](const std::string& name) {
    return lone_call_epilogue(graph, graph.node(node_named(graph, name)));
  };
  EXPECT_EQ(of("matmul"), (LibraryEpilogue{Library::kCublasLt, {}}));
  EXPECT_EQ(of("gemm_bias"), (LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kBias}}));
  EXPECT_EQ(of("gemm_residual"), (LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kResidualAdd}}));
  EXPECT_EQ(of("gemm_scaled_bias"), std::nullopt);
  EXPECT_EQ(of("conv"), (LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias}}));
  EXPECT_EQ(of("pool"), (LibraryEpilogue{Library::kCudnn, {}}));
  EXPECT_EQ(of("relu"), std::nullopt);
  // A Gemm without an epilogue form is still a cuBLASLt call; the runtime decides how.
  auto library = [&](const std::string& name) {
    return lone_call_library(graph.node(node_named(graph, name)));
  };
  EXPECT_EQ(library("gemm_scaled_bias"), Library::kCublasLt);
  EXPECT_EQ(library("pool"), Library::kCudnn);
  EXPECT_EQ(library("relu"), std::nullopt);
}

// -----  bind_epilogue.

constexpr const char* kConvChain = R"(graph "g" (%x: f32[1,3,8,8], %w: f32[2,3,3,3], %b: f32[2],
               %skip: f32[1,2,6,6]) {
  %c: f32[1,2,6,6] = Conv(%x, %w, %b) {name="conv"}
  %s: f32[1,2,6,6] = Add(%skip, %c) {name="add"}
  %y: f32[1,2,6,6] = Relu(%s) {name="relu"}
  return %y
})";

TEST(LibraryCallTest, BindsEachOpToTheValueItReads) {
  ir::Model model = parse(kConvChain);
  const ir::Graph& graph = model.graph;
  std::string why;
  std::optional<BoundEpilogue> bound = bind_epilogue(
      graph,
      LibraryEpilogue{Library::kCudnn,
                      {EpilogueOp::kBias, EpilogueOp::kResidualAdd, EpilogueOp::kRelu}},
      &why);
  ASSERT_TRUE(bound.has_value()) << why;
  EXPECT_EQ(bound->call, node_named(graph, "conv"));
  EXPECT_EQ(graph.value(bound->bias).name, "b");
  EXPECT_EQ(graph.value(bound->residual).name, "skip");
  EXPECT_EQ(bound->residual_scale, 1.0f);
  EXPECT_TRUE(bound->relu);
  EXPECT_EQ(graph.value(bound->output).name, "y");
}

TEST(LibraryCallTest, GemmOwnResidualKeepsBeta) {
  ir::Model model = parse(R"(graph "g" (%a: f32[4,8], %w: f32[8,6], %z: f32[4,6]) {
  %r: f32[4,6] = Gemm(%a, %w, %z) {name="gemm", beta=0.5}
  return %r
})");
  std::string why;
  std::optional<BoundEpilogue> bound = bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kResidualAdd}}, &why);
  ASSERT_TRUE(bound.has_value()) << why;
  EXPECT_EQ(model.graph.value(bound->residual).name, "z");
  EXPECT_EQ(bound->bias, ir::kNoId);
  EXPECT_EQ(bound->residual_scale, 0.5f);
  EXPECT_FALSE(bound->relu);
}

TEST(LibraryCallTest, BindRefusesABodyThatIsNotTheDecidedChain) {
  ir::Model model = parse(kConvChain);
  std::string why;
  // The Add is no scale (a Mul).
  EXPECT_FALSE(bind_epilogue(
      model.graph,
      LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kScale, EpilogueOp::kRelu}},
      &why));
  EXPECT_EQ(why, "\"add\" (Add) is not the epilogue's scale of the previous output");
  // The Relu is no clip.
  EXPECT_FALSE(bind_epilogue(
      model.graph,
      LibraryEpilogue{Library::kCudnn,
                      {EpilogueOp::kBias, EpilogueOp::kResidualAdd, EpilogueOp::clip(0, 6)}},
      &why));
  EXPECT_EQ(why, "\"relu\" (Relu) is not the epilogue's clip(0,6) of the previous output");
  // The Relu is not in the decision.
  EXPECT_FALSE(bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kResidualAdd}},
      &why));
  EXPECT_EQ(why, "\"relu\" (Relu) is not one of the epilogue's 2 ops");
  // The decision names an op the body lacks.
  EXPECT_FALSE(bind_epilogue(model.graph,
                             LibraryEpilogue{Library::kCudnn,
                                             {EpilogueOp::kBias, EpilogueOp::kResidualAdd,
                                              EpilogueOp::kRelu, EpilogueOp::kRelu}},
                             &why));
  EXPECT_EQ(why, "the epilogue names 4 ops, the step's body applies 3");
  // The Conv's own bias needs a bias or residual op first.
  EXPECT_FALSE(bind_epilogue(model.graph, LibraryEpilogue{Library::kCudnn, {}}, &why));
  EXPECT_EQ(why, "\"conv\" (Conv)'s third operand is not the epilogue's bias or residual add");
}

TEST(LibraryCallTest, BindsPointwiseOpsAndSwishsTwoNodes) {
  ir::Model model = parse(R"(graph "g" (%x: f16[1,4,8,8], %w: f16[8,4,3,3], %s: f16[1,8,1,1]) {
  %lo: f16[] = dense<f16[]>[0]
  %hi: f16[] = dense<f16[]>[6]
  %c: f16[1,8,6,6] = Conv(%x, %w) {name="conv"}
  %m: f16[1,8,6,6] = Mul(%c, %s) {name="scale"}
  %p: f16[1,8,6,6] = Clip(%m, %lo, %hi) {name="relu6"}
  %g: f16[1,8,6,6] = Sigmoid(%p) {name="gate"}
  %y: f16[1,8,6,6] = Mul(%g, %p) {name="silu"}
  %h: f16[1,8,6,6] = HardSwish(%y) {name="hardswish"}
  return %h
})");
  const ir::Graph& graph = model.graph;
  const LibraryEpilogue epilogue{
      Library::kCudnn,
      {EpilogueOp::kScale, EpilogueOp::clip(0, 6), EpilogueOp::kSwish, EpilogueOp::kHardSwish}};
  std::string why;
  std::optional<BoundEpilogue> bound = bind_epilogue(graph, epilogue, &why);
  ASSERT_TRUE(bound.has_value()) << why;
  ASSERT_EQ(bound->operands.size(), 4u);
  EXPECT_EQ(graph.value(bound->operands[0]).name, "s");
  EXPECT_EQ(bound->operands[1], ir::kNoId);
  EXPECT_EQ(graph.value(bound->output).name, "h");
  EXPECT_EQ(bound->bias, ir::kNoId);
  EXPECT_FALSE(bound->relu);
  // Swish is two nodes: a decision with a Sigmoid alone does not bind them.
  EXPECT_FALSE(bind_epilogue(graph,
                             LibraryEpilogue{Library::kCudnn,
                                             {EpilogueOp::kScale, EpilogueOp::clip(0, 6),
                                              EpilogueOp::kSigmoid, EpilogueOp::kHardSwish}},
                             &why));
  EXPECT_EQ(why, "\"silu\" (Mul) is not the epilogue's hardswish of the previous output");
}

// A body's scalars are its inputs: the opened HardSwish binds by its structure.
TEST(LibraryCallTest, BindsAnOpenedHardSwish) {
  ir::Model model = parse(R"(graph "g" (%x: f16[1,4,8,8], %w: f16[8,4,1,1], %k1: f16[], %k2: f16[],
               %k3: f16[], %k4: f16[]) {
  %c: f16[1,8,8,8] = Conv(%x, %w) {name="conv"}
  %s: f16[1,8,8,8] = Mul(%k1, %c) {name="scaled"}
  %a: f16[1,8,8,8] = Add(%s, %k2) {name="shifted"}
  %n: f16[1,8,8,8] = Min(%a, %k3) {name="min"}
  %m: f16[1,8,8,8] = Max(%n, %k4) {name="max"}
  %y: f16[1,8,8,8] = Mul(%c, %m) {name="gate_mul"}
  return %y
})");
  std::string why;
  std::optional<BoundEpilogue> bound =
      bind_epilogue(model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kHardSwish}}, &why);
  ASSERT_TRUE(bound.has_value()) << why;
  EXPECT_EQ(model.graph.value(bound->output).name, "y");
  // Checked against the constants, the inputs are no 1/6, 1/2, 1 and 0.
  EXPECT_FALSE(opened_hard_swish(model.graph, model.graph.node(bound->call).outputs[0], true));
  EXPECT_TRUE(opened_hard_swish(model.graph, model.graph.node(bound->call).outputs[0], false));
}

// The opened GELU binds whatever topological order the body gives its five nodes (here
// the halving Mul first, before the Erf's branch).
TEST(LibraryCallTest, BindsAnOpenedGeluInTheBodysOrder) {
  ir::Model model = parse(R"(graph "g" (%a: f16[16,32], %w: f16[32,8], %b: f16[8], %k1: f16[],
               %k2: f16[], %k3: f16[]) {
  %t: f16[16,8] = MatMul(%a, %w) {name="mm"}
  %u: f16[16,8] = Add(%t, %b) {name="bias"}
  %h: f16[16,8] = Mul(%u, %k3) {name="half"}
  %s: f16[16,8] = Mul(%u, %k1) {name="scaled"}
  %e: f16[16,8] = Erf(%s) {name="erf"}
  %p: f16[16,8] = Add(%e, %k2) {name="plus_one"}
  %y: f16[16,8] = Mul(%h, %p) {name="gelu"}
  return %y
})");
  std::string why;
  std::optional<BoundEpilogue> bound = bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kGelu}}, &why);
  ASSERT_TRUE(bound.has_value()) << why;
  EXPECT_EQ(model.graph.value(bound->output).name, "y");
  EXPECT_EQ(model.graph.value(bound->operands[0]).name, "b");
  // A swish is not a GELU.
  EXPECT_FALSE(bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kSwish}},
      &why));
}

// The opened tanh GELU binds whatever topological order the body gives its nodes
// (here the halving Mul and the cube's Pow first), and is no erf GELU.
TEST(LibraryCallTest, BindsAnOpenedTanhGeluInTheBodysOrder) {
  ir::Model model = parse(R"(graph "g" (%a: f16[16,32], %w: f16[32,8], %b: f16[8], %k0: f16[],
               %k1: f16[], %k2: f16[], %k3: f16[], %k4: f16[]) {
  %t: f16[16,8] = MatMul(%a, %w) {name="mm"}
  %u: f16[16,8] = Add(%t, %b) {name="bias"}
  %h: f16[16,8] = Mul(%u, %k4) {name="half"}
  %c: f16[16,8] = Pow(%u, %k0) {name="cube"}
  %t3: f16[16,8] = Mul(%c, %k1) {name="cube_scaled"}
  %i: f16[16,8] = Add(%t3, %u) {name="inner"}
  %s: f16[16,8] = Mul(%i, %k2) {name="scaled"}
  %e: f16[16,8] = Tanh(%s) {name="tanh"}
  %p: f16[16,8] = Add(%e, %k3) {name="plus_one"}
  %y: f16[16,8] = Mul(%h, %p) {name="gelu"}
  return %y
})");
  std::string why;
  std::optional<BoundEpilogue> bound = bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kGeluTanh}},
      &why);
  ASSERT_TRUE(bound.has_value()) << why;
  EXPECT_EQ(model.graph.value(bound->output).name, "y");
  EXPECT_EQ(model.graph.value(bound->operands[0]).name, "b");
  EXPECT_FALSE(bind_epilogue(
      model.graph, LibraryEpilogue{Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kGelu}}, &why));
  // The bias's output u opens into the eight nodes; checked against the constants, the
  // inputs are no 3, 0.044715, sqrt(2 / pi), 1 and 1/2.
  const ir::NodeId bias = model.graph.value(bound->operands[0]).users[0].node;
  const ir::ValueId u = model.graph.node(bias).outputs[0];
  std::optional<std::vector<ir::NodeId>> opened = opened_gelu_tanh(model.graph, u, false);
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(opened->size(), 8u);
  EXPECT_EQ(model.graph.node(opened->front()).name, "cube");
  EXPECT_EQ(model.graph.node(opened->back()).name, "gelu");
  EXPECT_FALSE(opened_gelu_tanh(model.graph, u, true).has_value());
}

}  // namespace
}  // namespace stitch::artifact
