// Constant folding's size rule, which needs a small PassContext limit (the golden
// files run with the default 1 MiB).
#include "ir/passes/constant_folding.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace stitch::ir {
namespace {

// A 16x16 f32 weight: 1 KiB.
Tensor weight() {
  std::vector<float> values(256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::from_float({16, 16}, values);
}

struct Folded {
  bool changed = false;
  bool transpose_left = false;
};

// Graph: t = Transpose(w); output t (and, when `shared`, also Neg(w)).
Folded fold_transpose(bool shared, int64_t limit) {
  Graph graph;
  ValueId w = graph.add_initializer("w", weight());
  ValueId t = graph.add_value("t", TensorType::make(DType::kFloat32, {16, 16}));
  NodeId transpose = graph.add_node("Transpose", {w}, {t}, "", "transpose");
  graph.node(transpose).opset = 17;
  graph.add_graph_output(t);
  if (shared) {
    ValueId n = graph.add_value("n", TensorType::make(DType::kFloat32, {16, 16}));
    graph.node(graph.add_node("Neg", {w}, {n}, "", "neg")).opset = 17;
    graph.add_graph_output(n);
  }
  PassContext context;
  context.default_opset = 17;
  context.max_folded_constant_bytes = limit;
  Result<bool> result = fold_constants(graph, context);
  EXPECT_TRUE(result.is_ok()) << result.status().message();
  Folded folded;
  folded.changed = result.is_ok() && *result;
  folded.transpose_left = !graph.node(transpose).dead;
  if (!folded.transpose_left) {
    const Value& value = graph.value(t);
    EXPECT_TRUE(value.is_initializer());
    EXPECT_EQ(value.constant->float_at(1), 16.0);  // t[0][1] = w[1][0]
    EXPECT_EQ(value.constant->float_at(16), 1.0);
  }
  return folded;
}

TEST(ConstantFoldingTest, FoldsUnderTheLimit) {
  Folded folded = fold_transpose(/*shared=*/true, /*limit=*/1024);
  EXPECT_TRUE(folded.changed);
  EXPECT_FALSE(folded.transpose_left);
}

TEST(ConstantFoldingTest, KeepsTransposeOfASharedWeightOverTheLimit) {
  Folded folded = fold_transpose(/*shared=*/true, /*limit=*/512);
  EXPECT_FALSE(folded.changed);
  EXPECT_TRUE(folded.transpose_left);
}

TEST(ConstantFoldingTest, FoldsTransposeOfAWeightOnlyItReadsOverTheLimit) {
  // The result replaces w (which dies), so nothing is duplicated.
  Folded folded = fold_transpose(/*shared=*/false, /*limit=*/512);
  EXPECT_TRUE(folded.changed);
  EXPECT_FALSE(folded.transpose_left);
}

TEST(ConstantFoldingTest, KeepsAnExpansionOverTheLimit) {
  Graph graph;
  ValueId one = graph.add_initializer("one", Tensor::from_float({}, {1.0f}));
  ValueId shape = graph.add_initializer("shape", Tensor::from_int64({1}, {1024}));
  ValueId out = graph.add_value("out", TensorType::make(DType::kFloat32, {1024}));
  NodeId expand = graph.add_node("Expand", {one, shape}, {out}, "", "expand");
  graph.node(expand).opset = 17;
  graph.add_graph_output(out);
  PassContext context;
  context.default_opset = 17;
  context.max_folded_constant_bytes = 1024;  // the result is 4 KiB, its inputs 12 bytes
  Result<bool> result = fold_constants(graph, context);
  ASSERT_TRUE(result.is_ok());
  EXPECT_FALSE(*result);
  EXPECT_FALSE(graph.node(expand).dead);
  EXPECT_EQ(context.folded_nodes, 0);
  // The report says why (simplify.constant_folding.kept).
  EXPECT_EQ(why_not_folded(graph, graph.node(expand), context),
            "its 4096-byte result is over the 1024-byte limit and frees only 12 bytes of "
            "inputs");

  context.max_folded_constant_bytes = 4096;
  EXPECT_EQ(why_not_folded(graph, graph.node(expand), context), std::nullopt);
  result = fold_constants(graph, context);
  ASSERT_TRUE(result.is_ok());
  EXPECT_TRUE(*result);
  EXPECT_TRUE(graph.node(expand).dead);
  EXPECT_EQ(graph.value(out).constant->num_elements(), 1024);
  EXPECT_EQ(context.folded_nodes, 1);
  EXPECT_EQ(context.folded_bytes, 4096);
}

TEST(ConstantFoldingTest, LeavesANodeTheInterpreterRejects) {
  // Mod with fmod=0 is undefined for floats: the run-time's to report, not a compile
  // failure.
  Graph graph;
  ValueId a = graph.add_initializer("a", Tensor::from_float({}, {1}));
  ValueId b = graph.add_initializer("b", Tensor::from_float({}, {2}));
  ValueId out = graph.add_value("out", TensorType::make(DType::kFloat32, {}));
  NodeId mod = graph.add_node("Mod", {a, b}, {out}, "", "mod");
  graph.node(mod).opset = 17;
  graph.add_graph_output(out);
  PassContext context;
  context.default_opset = 17;
  Result<bool> result = fold_constants(graph, context);
  ASSERT_TRUE(result.is_ok());
  EXPECT_FALSE(*result);
  EXPECT_FALSE(graph.node(mod).dead);
  std::optional<std::string> why = why_not_folded(graph, graph.node(mod), context);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("the reference interpreter rejected it: ", 0), 0u) << *why;
}

TEST(ConstantFoldingTest, SaysWhyRandomAndForeignOpsStay) {
  Graph graph;
  ValueId shape = graph.add_initializer("shape", Tensor::from_int64({1}, {4}));
  ValueId noise = graph.add_value("noise", TensorType::make(DType::kFloat32, {4}));
  NodeId random = graph.add_node("RandomNormalLike", {shape}, {noise}, "", "random");
  ValueId custom = graph.add_value("custom", TensorType::make(DType::kFloat32, {4}));
  NodeId foreign = graph.add_node("Custom", {shape}, {custom}, "com.example", "custom");
  ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {4}));
  graph.add_graph_input(x);
  ValueId sum = graph.add_value("sum", TensorType::make(DType::kFloat32, {4}));
  NodeId add = graph.add_node("Add", {x, noise}, {sum}, "", "add");
  graph.add_graph_output(sum);
  graph.add_graph_output(custom);
  PassContext context;
  context.default_opset = 17;
  EXPECT_EQ(why_not_folded(graph, graph.node(random), context),
            "random op: its value changes from run to run");
  EXPECT_EQ(why_not_folded(graph, graph.node(foreign), context), "op of domain com.example");
  EXPECT_EQ(why_not_folded(graph, graph.node(add), context), std::nullopt);  // x is an input
}

// Integer division by zero and INT64_MIN / -1 fold by the interpreter's rule (0 and
// INT64_MIN, docs/semantics.md) instead of trapping the compiler.
TEST(ConstantFoldingTest, FoldsIntegerDivisionByZeroAndMinOverMinusOne) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Graph graph;
  ValueId a = graph.add_initializer("a", Tensor::from_int64({3}, {7, kMin, kMin}));
  ValueId b = graph.add_initializer("b", Tensor::from_int64({3}, {0, -1, 0}));
  ValueId out = graph.add_value("out", TensorType::make(DType::kInt64, {3}));
  NodeId div = graph.add_node("Div", {a, b}, {out}, "", "div");
  graph.node(div).opset = 17;
  graph.add_graph_output(out);
  PassContext context;
  context.default_opset = 17;
  Result<bool> result = fold_constants(graph, context);
  ASSERT_TRUE(result.is_ok());
  EXPECT_TRUE(*result);
  EXPECT_TRUE(graph.node(div).dead);
  ASSERT_NE(graph.value(out).constant, nullptr);
  EXPECT_EQ(graph.value(out).constant->to_int64_vector(), (std::vector<int64_t>{0, kMin, 0}));
}

}  // namespace
}  // namespace stitch::ir
