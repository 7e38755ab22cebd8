// Tests of Graph's editing operations and of compact().
#include "ir/core/graph.h"

#include <gtest/gtest.h>

namespace stitch::ir {
namespace {

TEST(GraphTest, AddNodeLinksProducersAndUsers) {
  Graph graph;
  ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {2, 3}));
  ValueId y = graph.add_value("y", TensorType::make(DType::kFloat32, {2, 3}));
  graph.add_graph_input(x);
  NodeId relu = graph.add_node("Relu", {x}, {y}, "", "relu_0");
  graph.add_graph_output(y);
  EXPECT_EQ(graph.value(y).producer, relu);
  ASSERT_EQ(graph.value(x).users.size(), 1u);
  EXPECT_EQ(graph.value(x).users[0], (Use{relu, 0}));
  EXPECT_EQ(graph.node(relu).display_name(), "\"relu_0\" (Relu)");
}

TEST(GraphTest, DisplayNameQuotesHostileNames) {
  Graph graph;
  ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {2}));
  ValueId y = graph.add_value("y", TensorType::make(DType::kFloat32, {2}));
  NodeId relu = graph.add_node("Relu", {x}, {y}, "", "r\n\xff");
  EXPECT_EQ(graph.node(relu).display_name(), "\"r\\n\\xff\" (Relu)");
  NodeId odd = graph.add_node("Odd\nOp", {y}, {graph.add_value("z", TensorType())}, "", "n");
  EXPECT_EQ(graph.node(odd).display_name(), "\"n\" (\"Odd\\nOp\")");
}

TEST(GraphTest, ReplaceAllUsesMovesUsersAndGraphOutputs) {
  Graph graph;
  ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {4}));
  ValueId a = graph.add_value("a", TensorType::make(DType::kFloat32, {4}));
  ValueId b = graph.add_value("b", TensorType::make(DType::kFloat32, {4}));
  graph.add_graph_input(x);
  NodeId identity = graph.add_node("Identity", {x}, {a});
  NodeId neg = graph.add_node("Neg", {a}, {b});
  graph.add_graph_output(a);
  graph.replace_all_uses(a, x);
  EXPECT_EQ(graph.node(neg).inputs[0], x);
  EXPECT_TRUE(graph.value(a).users.empty());
  EXPECT_EQ(graph.graph_outputs()[0], x);
  EXPECT_FALSE(graph.value(a).is_graph_output);
  graph.remove_node(identity);
  graph.remove_value(a);
  graph.compact();
  EXPECT_EQ(graph.num_nodes(), 1);
  EXPECT_EQ(graph.node(0).op_type, "Neg");
  EXPECT_EQ(graph.value(graph.node(0).inputs[0]).name, "x");
  EXPECT_EQ(graph.find_value("a"), std::nullopt);
  EXPECT_EQ(*graph.find_value("b"), graph.node(0).outputs[0]);
}

TEST(GraphTest, UniqueValueNameAppendsCounter) {
  Graph graph;
  graph.add_value("t", TensorType{});
  graph.add_value("t_1", TensorType{});
  EXPECT_EQ(graph.unique_value_name("t"), "t_2");
  EXPECT_EQ(graph.unique_value_name("u"), "u");
}

TEST(TensorTest, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(half_to_float(0x0001), 5.9604644775390625e-08f);
  EXPECT_EQ(float_to_half(5.9604644775390625e-08f), 0x0001);
  // 1 + 2^-11 is halfway between 1 and the next half; ties go to even (1.0).
  EXPECT_EQ(float_to_half(1.00048828125f), 0x3c00);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
}

TEST(TensorTest, FromDoublesRoundsToTheDtype) {
  // 1 + 2^-11 rounds to 1 in f16 (ties to even) and in bf16; f64 keeps it.
  const std::vector<double> values = {1.00048828125, -2.5};
  Tensor f16 = Tensor::from_doubles(DType::kFloat16, {2}, values);
  EXPECT_EQ(f16.bytes.size(), 4u);
  EXPECT_EQ(f16.element<uint16_t>(0), 0x3c00);
  EXPECT_EQ(f16.float_at(1), -2.5);
  Tensor bf16 = Tensor::from_doubles(DType::kBFloat16, {2}, values);
  EXPECT_EQ(bf16.element<uint16_t>(0), 0x3f80);
  Tensor f32 = Tensor::from_doubles(DType::kFloat32, {1, 2}, values);
  EXPECT_EQ(f32.dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f32.element<float>(0), 1.00048828125f);
  Tensor f64 = Tensor::from_doubles(DType::kFloat64, {2}, values);
  EXPECT_EQ(f64.element<double>(0), 1.00048828125);
  EXPECT_EQ(f64.element<double>(1), -2.5);
}

TEST(GraphTest, ConstantNodeValueReadsEveryValueAttribute) {
  Node node;
  node.op_type = "Constant";
  EXPECT_EQ(constant_node_value(node), std::nullopt);
  node.attributes = {Attribute::make_ints("value_ints", {3, -1})};
  EXPECT_EQ(constant_node_value(node), Tensor::from_int64({2}, {3, -1}));
  node.attributes = {Attribute::make_strings("value_strings", {"a", "b"})};
  std::optional<Tensor> strings = constant_node_value(node);
  ASSERT_TRUE(strings.has_value());
  EXPECT_EQ(strings->dtype, DType::kString);
  EXPECT_EQ(strings->dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(strings->strings, (std::vector<std::string>{"a", "b"}));
  node.attributes = {Attribute::make_tensor("value", Tensor::from_float({1}, {0.5f}))};
  EXPECT_EQ(constant_node_value(node), Tensor::from_float({1}, {0.5f}));
}

TEST(TensorTest, TypeToString) {
  EXPECT_EQ(to_string(TensorType::make(DType::kFloat32, {1, kUnknownDim})), "f32[1,?]");
  EXPECT_EQ(to_string(TensorType{DType::kInt64, false, {}}), "i64[*]");
  EXPECT_EQ(to_string(TensorType::make(DType::kBool, {})), "bool[]");
}

}  // namespace
}  // namespace stitch::ir
